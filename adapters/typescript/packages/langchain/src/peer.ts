/** Imported first: refuses a LangChain.js this package does not support before anything else loads. */

import { requirePeer } from '@crossgate/client';

requirePeer('@crossgate/langchain', 'langchain', { min: '1.5.14', below: '2.0.0' }, import.meta.url);
