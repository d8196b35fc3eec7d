/** Imported first: refuses a version of the SDK this package does not support before anything else loads. */

import { requirePeer } from '@crossgate/client';

requirePeer('@crossgate/openai-agents', '@openai/agents', { min: '0.20.0', below: '0.21.0' }, import.meta.url);
