/** Imported first: refuses a version of the SDK this package does not support before anything else loads. */

import { requirePeer } from '@crossgate/client';

requirePeer('@crossgate/mastra', '@mastra/core', { min: '1.71.0', below: '2.0.0' }, import.meta.url);
