// multipart/form-data bodies (image edits) via uWS's native parser: text fields by name, file parts
// summarised (name, filename, size, content type) — the bytes stay in the recorded rawBody.
import uWS from '../server/uws.ts';

export interface MultipartFile {
  name: string;
  filename: string;
  size: number;
  contentType: string;
}

export interface MultipartBody {
  /** Text fields; a name sent more than once collects its values in an array. */
  fields: Record<string, string | string[]>;
  files: MultipartFile[];
}

/** The parsed form, or null when the body is not valid multipart for that content type. */
export function parseMultipart(raw: Buffer, contentType: string): MultipartBody | null {
  let parts: uWS.MultipartField[] | undefined;
  try {
    // getParts lowercases part header names in the buffer it is given: parse a copy, so the
    // recorded rawBody stays the bytes as received.
    parts = uWS.getParts(Buffer.from(raw), contentType);
  } catch {
    return null;
  }
  if (!parts) return null;
  const fields: Record<string, string | string[]> = {};
  const files: MultipartFile[] = [];
  for (const p of parts) {
    if (p.filename !== undefined) {
      files.push({
        name: p.name,
        filename: p.filename,
        size: p.data.byteLength,
        contentType: p.type ?? 'application/octet-stream',
      });
      continue;
    }
    const value = Buffer.from(p.data).toString('utf8');
    const prev = fields[p.name];
    if (prev === undefined) fields[p.name] = value;
    else if (Array.isArray(prev)) prev.push(value);
    else fields[p.name] = [prev, value];
  }
  return { fields, files };
}
