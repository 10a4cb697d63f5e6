import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorBody } from '../errors/api-exception';
import { ErrorCode } from '../errors/error-code';

/** What Node's HTTP parser refused, as the status and message the answer carries. */
function refusal(code: string | undefined): { status: number; message: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: 'The request line or headers are too large' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, message: 'Request body is too large' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, message: 'The request was not received in time' };
    default:
      return { status: 400, message: 'Malformed HTTP request' };
  }
}

/**
 * Answers the requests Node's HTTP parser refuses before any route sees them (a request line or
 * headers over its limit, a malformed request, one not received in time) with the error body every
 * other error carries, instead of Node's bare status line; then closes the connection, as Node does.
 * Nothing is written to a connection already gone, or one whose response has begun.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const answering = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || answering?.headersSent) {
      socket.destroy();
      return;
    }
    const { status, message } = refusal(err.code);
    const body = JSON.stringify({ errorCode: ErrorCode.BadRequest, message, statusCode: status } satisfies ErrorBody);
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
