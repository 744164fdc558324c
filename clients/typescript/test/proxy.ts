// A TCP proxy in front of the API that records each request's head and can cut every
// connection through it at once: a real dropped connection, as a network or a load
// balancer gives, for the stream to recover from.

import net from "node:net";

export class CuttingProxy {
  /** the head (request line and headers) of every request that went through */
  readonly requests: string[] = [];
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    readonly url: string,
  ) {}

  static async start(target: string): Promise<CuttingProxy> {
    const upstream = new URL(target);
    const server = net.createServer();
    const port = await new Promise<number>((resolve) => {
      server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port));
    });
    const proxy = new CuttingProxy(server, `http://127.0.0.1:${port}`);
    server.on("connection", (downstream) => proxy.pipe(downstream, upstream));
    return proxy;
  }

  private pipe(downstream: net.Socket, upstream: URL): void {
    const up = net.connect(Number(upstream.port), upstream.hostname);
    this.sockets.add(downstream);
    this.sockets.add(up);
    let head = "";
    downstream.on("data", (chunk: Buffer) => {
      head += chunk.toString("latin1");
      // requests on this connection carry no body (GETs): each ends at a blank line
      let end = head.indexOf("\r\n\r\n");
      while (end >= 0) {
        this.requests.push(head.slice(0, end).toLowerCase());
        head = head.slice(end + 4);
        end = head.indexOf("\r\n\r\n");
      }
      up.write(chunk);
    });
    up.on("data", (chunk: Buffer) => downstream.write(chunk));
    const close = () => {
      downstream.destroy();
      up.destroy();
      this.sockets.delete(downstream);
      this.sockets.delete(up);
    };
    downstream.on("close", close);
    up.on("close", close);
    downstream.on("error", close);
    up.on("error", close);
  }

  /** Cut every open connection, mid-stream. */
  cut(): number {
    const open = this.sockets.size;
    for (const socket of this.sockets) socket.destroy();
    return open;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
