// A TCP proxy between a driver and gatedb serve that can lose one reply.
//
// It forwards whole wire-protocol messages both ways (16-byte header:
// int32 LE messageLength, requestID, responseTo, opCode). For each OP_MSG
// (opcode 2013) request it decodes the body section (flagBits, then section
// kind 0: one BSON document) and records the command name (the body's first
// key), its lsid and txnNumber. After arm(name), the reply to the next
// request named `name` is not forwarded: the proxy destroys both sockets of
// that connection instead, as a network failure after the server applied the
// command but before the client heard of it. A driver with retryable writes
// then resends the command on a new connection with the same lsid and
// txnNumber.
//
// Listens on 127.0.0.1 only, and connects only to 127.0.0.1:<targetPort>.

import net from 'node:net';
import { BSON } from 'mongodb';

const OP_MSG = 2013;
const HEADER = 16;

// Splits complete messages off the front of a growing buffer.
class Framer {
  constructor(onMessage) {
    this.buf = Buffer.alloc(0);
    this.onMessage = onMessage;
  }

  push(chunk) {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    while (this.buf.length >= 4) {
      const len = this.buf.readInt32LE(0);
      if (len < HEADER) throw new Error(`proxy: bad message length ${len}`);
      if (this.buf.length < len) break;
      const msg = this.buf.subarray(0, len);
      this.buf = this.buf.subarray(len);
      if (this.onMessage(msg) === false) return;
    }
  }
}

// Decodes an OP_MSG request's body, or returns null for other opcodes.
function decodeOpMsgBody(msg) {
  if (msg.readInt32LE(12) !== OP_MSG) return null;
  let off = HEADER + 4; // after flagBits
  const flags = msg.readUInt32LE(HEADER);
  const end = (flags & 1) ? msg.length - 4 : msg.length; // checksumPresent
  while (off < end) {
    const kind = msg[off];
    off += 1;
    const size = msg.readInt32LE(off);
    if (kind === 0) return BSON.deserialize(msg.subarray(off, off + size));
    off += size; // kind 1: the size counts itself
  }
  return null;
}

export class ReplyDroppingProxy {
  constructor(targetPort) {
    this.targetPort = targetPort;
    this.server = null;
    this.port = 0;
    this.sockets = new Set();
    this.armedFor = null;
    this.dropped = []; // names of the commands whose reply was dropped
    this.requests = []; // {name, lsid (EJSON text or null), txnNumber (string or null), conn}
    this.nextConn = 1;
  }

  async listen() {
    this.server = net.createServer((client) => this.#handle(client));
    await new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', resolve);
    });
    this.port = this.server.address().port;
    return this.port;
  }

  // The reply to the next OP_MSG request whose command is `name` is lost.
  arm(name) {
    this.armedFor = name;
  }

  requestsNamed(name) {
    return this.requests.filter((r) => r.name === name);
  }

  async close() {
    for (const s of this.sockets) s.destroy();
    if (this.server) await new Promise((resolve) => this.server.close(() => resolve()));
  }

  #handle(client) {
    const conn = this.nextConn++;
    const upstream = net.connect(this.targetPort, '127.0.0.1');
    this.sockets.add(client);
    this.sockets.add(upstream);
    const doomed = new Map(); // requestID -> command name, for the replies to drop
    const kill = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', () => { this.sockets.delete(client); upstream.destroy(); });
    upstream.on('close', () => { this.sockets.delete(upstream); client.destroy(); });
    client.on('error', kill);
    upstream.on('error', kill);

    const fromClient = new Framer((msg) => {
      let body = null;
      try {
        body = decodeOpMsgBody(msg);
      } catch {
        body = null;
      }
      if (body !== null) {
        const name = Object.keys(body)[0];
        this.requests.push({
          name,
          lsid: body.lsid ? BSON.EJSON.stringify(body.lsid) : null,
          txnNumber: body.txnNumber !== undefined ? String(body.txnNumber) : null,
          conn,
        });
        if (this.armedFor !== null && name === this.armedFor) {
          this.armedFor = null;
          doomed.set(msg.readInt32LE(4), name);
        }
      }
      upstream.write(msg);
      return true;
    });
    const fromServer = new Framer((msg) => {
      const responseTo = msg.readInt32LE(8);
      if (doomed.has(responseTo)) {
        this.dropped.push(doomed.get(responseTo));
        doomed.delete(responseTo);
        kill();
        return false;
      }
      client.write(msg);
      return true;
    });
    client.on('data', (chunk) => {
      try {
        fromClient.push(chunk);
      } catch {
        kill();
      }
    });
    upstream.on('data', (chunk) => {
      try {
        fromServer.push(chunk);
      } catch {
        kill();
      }
    });
  }
}
