/** The scripted Messages API for the bundled CLI lives in @crossgate/testing (the cross-SDK tests use it too). */

export { calls, cliEnv, FINAL_TEXT, startMessagesApi, told } from '@crossgate/testing';
export type { MessagesApi, Told } from '@crossgate/testing';
