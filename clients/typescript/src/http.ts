// URL helpers every request shares.

/** A query's values; an array repeats its key (`?state=failed&state=cancelled`). */
export type Query = Record<string, string | number | readonly (string | number)[] | null | undefined>;

/** One path segment, escaped. */
export function enc(segment: string): string {
  return encodeURIComponent(segment);
}

/** `path` with the query's set values. */
export function withQuery(path: string, query: Query | undefined): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query ?? {})) {
    if (value === null || value === undefined) continue;
    if (Array.isArray(value)) for (const one of value) params.append(key, String(one));
    else params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}
