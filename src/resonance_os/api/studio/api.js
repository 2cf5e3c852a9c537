// The public REST API, called with the tenant's key from session storage; errors become ApiError.

const KEY_NAME = "resonance.apiKey";

export const session = {
  key: () => sessionStorage.getItem(KEY_NAME),
  signIn: (key) => sessionStorage.setItem(KEY_NAME, key),
  signOut: () => sessionStorage.removeItem(KEY_NAME),
};

export class ApiError extends Error {
  constructor(status, type, message, retryAfter = null) {
    super(message);
    this.status = status;
    this.type = type;
    this.retryAfter = retryAfter;
  }
}

async function send(method, path, body) {
  const headers = { Authorization: `Bearer ${session.key() ?? ""}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, "NetworkError", "The service could not be reached.");
  }
  if (!response.ok) {
    const error = (await response.json().catch(() => null))?.error ?? {};
    throw new ApiError(
      response.status,
      error.type ?? "HTTPError",
      error.message ?? response.statusText,
      response.headers.get("Retry-After"),
    );
  }
  return response;
}

export async function call(method, path, body) {
  const response = await send(method, path, body);
  if (response.status === 204) return null;
  return response.json().catch(() => null);
}

/**
 * POST to a server-sent-events route: `onProgress(data)` for each `progress` event; resolves with the
 * `result` event's data, rejects with an ApiError for an error status or an `error` event.
 */
export async function stream(path, body, onProgress) {
  const response = await send("POST", path, body);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new ApiError(0, "NetworkError", "The connection closed before the article was finished.");
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const fields = Object.fromEntries(
        buffer.slice(0, end).split("\n").map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]),
      );
      buffer = buffer.slice(end + 2);
      const data = JSON.parse(fields.data);
      if (fields.event === "progress") onProgress(data);
      else if (fields.event === "result") return data;
      else throw new ApiError(null, data.error.type, data.error.message);
    }
  }
}

/** `text` as a sentence: a capital first letter and a full stop, so that two joined messages read as two. */
export function sentence(text) {
  const trimmed = String(text ?? "").trim();
  if (!trimmed) return "";
  const capital = trimmed[0].toUpperCase() + trimmed.slice(1);
  return /[.!?…]$/.test(capital) ? capital : `${capital}.`;
}

/** What a writer who was refused (401) needs to hear: the key is not valid, and where a valid one comes from. */
export const KEY_NOT_VALID =
  "This API key is not valid: it may be mistyped, cut short when copied, or revoked. " +
  "Paste the whole key (it starts with rsk_), or ask whoever runs the service for a new one " +
  "(they make keys with resonance tenants create).";

/** Sentences a writer can act on, for any error the API (or the network) gave. */
export function describe(error) {
  if (!(error instanceof ApiError)) return `Something went wrong in the page. ${sentence(error.message)}`;
  const detail = sentence(error.message);
  switch (error.status) {
    case null:
      return `Writing stopped (${error.type}). ${detail}`;
    case 0:
      return `${detail} Check that the server is running, then try again.`;
    case 401:
      return KEY_NOT_VALID;
    case 404:
      return `Not found (404). ${detail}`;
    case 409:
      return `Conflict (409). ${detail}`;
    case 413:
      return `Too large to send (413). ${detail} Send a shorter text or fewer files.`;
    case 422:
      return `Please fix the input (422). ${detail}`;
    case 429: {
      const wait = error.retryAfter ? ` Try again in ${error.retryAfter} s.` : " Try again shortly.";
      return `Too many requests (429). ${detail}${wait}`;
    }
    default:
      return `The service answered ${error.status} (${error.type}). ${detail}`;
  }
}
