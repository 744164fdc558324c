// Plain text from API values: times, durations, usage, cost, JSON, clipped text.

function pad(n) {
  return String(n).padStart(2, "0");
}

export function fmtTime(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

export function fmtMs(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m ${s % 60}s`;
}

export function fmtUsage(usage) {
  if (!usage || typeof usage !== "object") return "—";
  const parts = Object.entries(usage).map(([k, v]) => `${k.replace(/_tokens$/, "")} ${v}`);
  return parts.length ? parts.join(", ") : "—";
}

export function fmtCost(cost) {
  return typeof cost === "number" ? "$" + cost.toFixed(6).replace(/0+$/, "").replace(/\.$/, "") : "—";
}

export function json(value) {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

export function clip(text, max) {
  const s = String(text ?? "");
  return s.length > max ? s.slice(0, max) + "…" : s;
}
