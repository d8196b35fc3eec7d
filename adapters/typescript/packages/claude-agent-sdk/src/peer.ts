/** Imported first: refuses a version of the SDK this package does not support before anything else loads. */

import { requirePeer } from '@crossgate/client';

requirePeer('@crossgate/claude-agent-sdk', '@anthropic-ai/claude-agent-sdk', { min: '0.3.332', below: '0.4.0' }, import.meta.url);
