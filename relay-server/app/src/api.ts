/**
 * HTTP to the relay that served this page. The device token goes in `Authorization: Bearer` only; redirects are
 * refused (a redirect could carry the token elsewhere). Every failure is an ApiError with a code.
 */

export class ApiError extends Error {
  constructor(
    message: string,
    /** 0 when the relay could not be reached. */
    readonly status: number,
    readonly code: string,
  ) {
    super(message);
  }
}

const TIMEOUT_MS = 15_000;

export async function request<T>(
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  { token, body }: { token?: string | null; body?: unknown } = {},
): Promise<T> {
  const headers: Record<string, string> = {};
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      redirect: 'error',
      cache: 'no-store',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch {
    throw new ApiError('cannot reach the relay', 0, 'unreachable');
  }
  const text = await res.text().catch(() => '');
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const error = (data as { error?: { code?: string; message?: string } } | null)?.error;
    throw new ApiError(error?.message ?? `relay answered ${res.status}`, res.status, error?.code ?? 'http_error');
  }
  return data as T;
}
