/** Imported first: refuses a version of the SDK this package does not support before anything else loads. */

import { requirePeer } from '@crossgate/client';

requirePeer('@crossgate/ai-sdk', 'ai', { min: '7.0.173', below: '8.0.0' }, import.meta.url);
