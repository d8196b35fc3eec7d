/** Imported first: refuses a LangGraph.js this package does not support before anything else loads. */

import { requirePeer } from '@crossgate/client';

requirePeer('@crossgate/langgraph', '@langchain/langgraph', { min: '1.7.3', below: '2.0.0' }, import.meta.url);
requirePeer('@crossgate/langgraph', '@langchain/core', { min: '1.4.0', below: '2.0.0' }, import.meta.url);
