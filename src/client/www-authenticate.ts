/**
 * `WWW-Authenticate` parsing (RFC 9110 §11.6.1): a header holds one or more challenges, each an
 * auth-scheme followed by a token68 or a comma-separated list of auth-params whose values are
 * tokens or quoted-strings (backslash escapes). Commas separate both the params of a challenge and
 * the challenges themselves: a name followed by `=` continues the current challenge, any other
 * token starts the next one.
 */

/** One challenge of a `WWW-Authenticate` header. */
export interface AuthChallenge {
  /** The auth-scheme, lower-cased (`bearer`, `basic`, …): schemes are case-insensitive. */
  scheme: string;
  /** The auth-params by lower-cased name, values unquoted and unescaped; the first of a repeated name wins. */
  params: Record<string, string>;
  /** The token68 form (`Basic dXNlcg==`), when the challenge has one instead of params. */
  token68?: string;
}

const kTchar = /[!#$%&'*+\-.^_`|~0-9A-Za-z]/;
const kToken68Char = /[A-Za-z0-9\-._~+/]/;

/**
 * Every challenge of one `WWW-Authenticate` header value (or of several joined with commas).
 * Lenient: parsing stops at the first thing no grammar allows, keeping the challenges before it.
 */
export function parseWwwAuthenticate(header: string): AuthChallenge[] {
  const challenges: AuthChallenge[] = [];
  let pos = 0;
  const n = header.length;
  const ows = () => { while (pos < n && (header[pos] === ' ' || header[pos] === '\t')) pos++; };
  const token = (at: number): number => { let end = at; while (end < n && kTchar.test(header[end]!)) end++; return end; };
  /** A quoted-string at `pos`: its unescaped text, with pos moved past it (an unterminated one runs to the end). */
  const quoted = (): string => {
    let text = '';
    pos++; // the opening quote
    while (pos < n && header[pos] !== '"') {
      if (header[pos] === '\\' && pos + 1 < n) pos++;
      text += header[pos];
      pos++;
    }
    pos++; // the closing quote
    return text;
  };
  /** If an auth-param starts at `pos`, where its `=` is (else -1): token BWS "=" BWS (token / quoted-string). */
  const paramAhead = (): number => {
    const nameEnd = token(pos);
    if (nameEnd === pos) return -1;
    let at = nameEnd;
    while (at < n && (header[at] === ' ' || header[at] === '\t')) at++;
    if (header[at] !== '=') return -1;
    let value = at + 1;
    while (value < n && (header[value] === ' ' || header[value] === '\t')) value++;
    return value < n && (header[value] === '"' || kTchar.test(header[value]!)) ? at : -1;
  };
  for (;;) {
    // Empty list elements (",,") are allowed.
    while (pos < n && (header[pos] === ',' || header[pos] === ' ' || header[pos] === '\t')) pos++;
    if (pos >= n) break;
    const schemeEnd = token(pos);
    if (schemeEnd === pos) break;
    const challenge: AuthChallenge = { scheme: header.slice(pos, schemeEnd).toLowerCase(), params: {} };
    challenges.push(challenge);
    pos = schemeEnd;
    ows();
    if (pos >= n) break;
    if (header[pos] === ',') continue; // a scheme alone
    if (paramAhead() === -1) {
      // token68: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
      const start = pos;
      while (pos < n && kToken68Char.test(header[pos]!)) pos++;
      while (pos < n && header[pos] === '=') pos++;
      if (pos === start) break;
      challenge.token68 = header.slice(start, pos);
      ows();
      if (pos < n && header[pos] !== ',') break;
      continue;
    }
    // auth-params, until a token that is not followed by "=" (the next challenge) or the end.
    for (;;) {
      const eq = paramAhead();
      if (eq === -1) break;
      const name = header.slice(pos, token(pos)).toLowerCase();
      pos = eq + 1;
      ows();
      let value: string;
      if (header[pos] === '"') {
        value = quoted();
      } else {
        const end = token(pos);
        value = header.slice(pos, end);
        pos = end;
      }
      if (!(name in challenge.params)) challenge.params[name] = value;
      ows();
      if (pos >= n) break;
      if (header[pos] !== ',') return challenges; // junk after a value: keep what parsed
      // Past the comma(s): another param of this challenge, or the next challenge.
      while (pos < n && (header[pos] === ',' || header[pos] === ' ' || header[pos] === '\t')) pos++;
    }
    if (pos < n && paramAhead() === -1 && token(pos) === pos) break;
  }
  return challenges;
}

/** The Bearer challenge among the `WWW-Authenticate` header lines, if there is one (scheme case-insensitive). */
export function bearerChallenge(lines: readonly string[]): AuthChallenge | undefined {
  for (const line of lines) {
    const found = parseWwwAuthenticate(line).find((c) => c.scheme === 'bearer');
    if (found !== undefined) return found;
  }
  return undefined;
}

/** A `scope` auth-param (space-delimited, RFC 6750 §3) as a list. */
export function scopeList(scope: string | undefined): string[] | undefined {
  return scope === undefined ? undefined : scope.split(/[ \t]+/).filter((s) => s !== '');
}
