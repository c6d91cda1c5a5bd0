// uWebSockets.js, loaded after the one limit it reads from the environment is set. uWS reads
// UWS_HTTP_MAX_HEADERS_SIZE once, when the addon is loaded, and caps a request's line plus headers
// at that many bytes (4 KiB without it): a request over the cap gets uWS's own 431 and a closed
// connection before any handler runs. 4 KiB refuses requests real clients send (a long query, a
// few cookies, a large token), so the gateway raises it to 16 KiB, Node.js's own default
// (--max-http-header-size); an operator's own value in the environment wins. Every import of the
// addon in src/ goes through this file (the architecture test holds it to that). It must first be
// loaded on the main thread: a worker thread's process.env is a copy the addon does not read. Every
// runtime does (the admin listener and the serving code are imported before any thread starts).
import './uws-header-limit.ts';
import uWS from 'uWebSockets.js';

export default uWS;
