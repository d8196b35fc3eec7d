/** What the model reads when this adapter refuses a call itself. */

export { denyMessage, fingerprintRefusal } from '@crossgate/client';
