/**
 * Who is asking, once authentication has said so. With authentication on, every request has one: its
 * threads belong to it, its rate limits are counted for it, and hooks, actions and agents see it.
 */
export interface Principal {
  /** Stable and unique: threads are owned by it and limits counted per it. Never a secret. */
  id: string;
  /** How it was authenticated: "api-key", "jwt", or what a custom `authenticate` hook says. */
  method: string;
  /** The verified JWT claims, or what a custom hook adds. Never the credential itself. */
  claims?: Record<string, unknown>;
  /**
   * When the credential stops being accepted, in milliseconds since the epoch (a JWT's `exp` plus the
   * clock tolerance). A WebSocket connection authenticated with it takes no operation after that and
   * is closed (4403) once none is under way. Unset: the credential does not expire.
   */
  expiresAt?: number;
}
