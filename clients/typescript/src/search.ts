// `client.search`: the tenant's turns across its sessions (`GET /v1/turns`), filtered.

import { type Connection, read } from "./connection.js";
import type { TurnPage, TurnSearchQuery } from "./types.js";

export class SearchApi {
  constructor(private readonly connection: Connection) {}

  /** A page of the tenant's turns across its sessions that match the filters, newest
   *  first (`metadata: ["customer=acme"]`, `state: ["failed"]`, …; `after`: the last
   *  page's `next`). */
  turns(query: TurnSearchQuery = {}): Promise<TurnPage> {
    return read<TurnPage>(this.connection, { method: "GET", path: "/v1/turns", query });
  }
}
