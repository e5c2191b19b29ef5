/** Reasons are clamped to this many characters (code points). */
export const kMaxReasonChars = 200;
/** Stored reasons never exceed this many UTF-8 bytes (200 code points of at most 4 bytes). */
export const kMaxReasonBytes = kMaxReasonChars * 4;
/**
 * How far into a hostile string the sanitiser looks for visible characters. A reason of megabytes
 * of control characters costs a bounded scan, not a scan of the whole body.
 */
const kScanLimit = 64 * 1024;

/** C0, DEL, C1, ALM, zero-width and bidi controls, LS/PS, word joiner to U+206F, BOM. */
function stripped(c: number): boolean {
  return c <= 0x1f
    || (c >= 0x7f && c <= 0x9f)
    || c === 0x061c
    || (c >= 0x200b && c <= 0x200f)
    || (c >= 0x2028 && c <= 0x202e)
    || (c >= 0x2060 && c <= 0x206f)
    || c === 0xfeff;
}

/**
 * Makes a cancellation reason safe for logs: renders non-strings to a short string, drops control and
 * invisible formatting characters and unpaired surrogates, and keeps at most `max` code points
 * (never splitting a pair). `null` and `undefined` mean "no reason" and stay `undefined`.
 */
export function sanitizeReason(value: unknown, max = kMaxReasonChars): string | undefined {
  if (value === undefined || value === null) return undefined;
  const text = typeof value === 'string' ? value : render(value, max * 4);
  const end = Math.min(text.length, kScanLimit);
  let out = '';
  let runStart = 0;
  let kept = 0;
  let i = 0;
  while (i < end && kept < max) {
    const c = text.charCodeAt(i);
    let width = 1;
    let keep: boolean;
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
      keep = d >= 0xdc00 && d <= 0xdfff;
      if (keep) width = 2;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      keep = false;
    } else {
      keep = !stripped(c);
    }
    if (!keep) {
      if (i > runStart) out += text.slice(runStart, i);
      runStart = i + 1;
    } else {
      kept++;
    }
    i += width;
  }
  if (i > runStart) out += text.slice(runStart, i);
  return out;
}

/** A short rendering of any value; never throws, never walks more than `budget` characters' worth. */
export function render(value: unknown, budget: number): string {
  const out: string[] = [];
  let size = 0;
  const push = (s: string): boolean => {
    out.push(s);
    size += s.length;
    return size < budget;
  };
  const walk = (v: unknown, depth: number): boolean => {
    switch (typeof v) {
      case 'string': return push(JSON.stringify(v.length > budget ? v.slice(0, budget) : v));
      case 'number': case 'boolean': case 'bigint': return push(String(v));
      case 'undefined': return push('undefined');
      case 'symbol': return push(v.description === undefined ? 'Symbol()' : `Symbol(${v.description.slice(0, budget)})`);
      case 'function': return push('[function]');
      default: break;
    }
    if (v === null) return push('null');
    if (depth > 3) return push(Array.isArray(v) ? '[…]' : '{…}');
    try {
      if (Array.isArray(v)) {
        if (!push('[')) return false;
        const n = Math.min(v.length, 10);
        for (let i = 0; i < n; i++) {
          if (i > 0 && !push(', ')) return false;
          if (!walk(v[i], depth + 1)) return false;
        }
        if (v.length > n && !push(', …')) return false;
        return push(']');
      }
      const keys = Object.keys(v as object);
      if (!push('{')) return false;
      const n = Math.min(keys.length, 10);
      for (let i = 0; i < n; i++) {
        if (i > 0 && !push(', ')) return false;
        const key = keys[i];
        if (!push(`${JSON.stringify(key.slice(0, budget))}: `)) return false;
        if (!walk((v as Record<string, unknown>)[key], depth + 1)) return false;
      }
      if (keys.length > n && !push(', …')) return false;
      return push('}');
    } catch {
      return push('[unrenderable]');
    }
  };
  walk(value, 0);
  return out.join('');
}
