/**
 * Where the Protected Resource Metadata document (RFC 9728) is served. Its own module, free of the
 * JWT verifier's imports (jose): the HTTP endpoint needs the paths on every server.
 */

/** Where a resource's metadata lives (RFC 9728 §3.1: the well-known prefix inserted before the path). */
export function metadataLocation(audience: string): { url: string; path: string } {
  const url = new URL(audience);
  const path = `/.well-known/oauth-protected-resource${url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '')}`;
  return { url: `${url.origin}${path}`, path };
}

/** The root well-known location (some clients only try it). */
export const kRootMetadataPath = '/.well-known/oauth-protected-resource';
