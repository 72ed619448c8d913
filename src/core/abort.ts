import { ClientDisconnectedError } from './errors.js';
/**
 * Abort signals handed to code the gateway does not own (adapters, agent clients, action handlers).
 *
 * Node dispatches `abort` to a signal's listeners synchronously and rethrows a listener's exception
 * on the next tick as an uncaught exception, which ends the process. A gateway aborts such signals
 * whenever a client goes away, so a handler whose abort listener throws would take every other
 * conversation down with it. A guarded signal is still a real AbortSignal (undici's fetch, timers
 * and streams accept it), but the listeners added to it through `addEventListener` or `onabort`
 * run inside a try/catch that reports their errors instead.
 */

type Listener = EventListenerOrEventListenerObject;

const addListener = EventTarget.prototype.addEventListener;
const removeListener = EventTarget.prototype.removeEventListener;
const onabortProperty = Object.getOwnPropertyDescriptor(AbortSignal.prototype, 'onabort')!;

/** What to do with a listener's exception, per guarded signal. */
const errorHandlers = new WeakMap<EventTarget, (error: unknown) => void>();
/** The guarding wrapper of each listener; one per listener, whichever guarded signals it listens to. */
const wrappers = new WeakMap<object, EventListener>();

function wrapperOf(listener: Listener): EventListener {
  let wrapper = wrappers.get(listener);
  if (!wrapper) {
    wrapper = function (this: unknown, event: Event) {
      try {
        if (typeof listener === 'function') listener.call(this, event);
        else listener.handleEvent(event);
      } catch (error) {
        errorHandlers.get(event.target as EventTarget)?.(error);
      }
    };
    wrappers.set(listener, wrapper);
  }
  return wrapper;
}

/**
 * The methods of a guarded signal, on a prototype of their own between the signal and
 * AbortSignal.prototype: guarding a signal adds no property, closure or map to it, which matters
 * with one guarded signal per run and thousands of runs at once.
 */
const GUARDED_SIGNAL: object = Object.create(AbortSignal.prototype, {
  addEventListener: {
    value(this: AbortSignal, type: string, listener: Listener | null, options?: AddEventListenerOptions | boolean) {
      return addListener.call(this, type, listener == null ? listener : wrapperOf(listener), options);
    },
  },
  removeEventListener: {
    value(this: AbortSignal, type: string, listener: Listener | null, options?: EventListenerOptions | boolean) {
      // Both the wrapper and the listener itself: a signal guarded in place (guardSignal) may still hold
      // listeners added before, unwrapped.
      const wrapper = listener == null ? undefined : wrappers.get(listener);
      if (wrapper) removeListener.call(this, type, wrapper, options);
      return removeListener.call(this, type, listener, options);
    },
  },
  onabort: {
    get(this: AbortSignal) {
      return onabortProperty.get!.call(this);
    },
    set(this: AbortSignal, value: unknown) {
      onabortProperty.set!.call(this, typeof value === 'function' ? wrapperOf(value as EventListener) : value);
    },
  },
});

function guard(signal: AbortSignal, onListenerError: (error: unknown) => void): AbortSignal {
  errorHandlers.set(signal, onListenerError);
  Object.setPrototypeOf(signal, GUARDED_SIGNAL);
  return signal;
}

/**
 * `signal` itself, guarded (see above) unless it already is: for a signal the gateway made plain and hands
 * to code it does not own only now and then (a request hook, an agent's loadState), so that requests
 * without such code pay nothing. Listeners added before stay as they were (the gateway's own); an already
 * guarded signal keeps its error handler.
 */
export function guardSignal(signal: AbortSignal, onListenerError: (error: unknown) => void): AbortSignal {
  if (Object.getPrototypeOf(signal) !== GUARDED_SIGNAL) guard(signal, onListenerError);
  return signal;
}

/** An AbortController whose signal is guarded (see above). */
export function guardedController(onListenerError: (error: unknown) => void): AbortController {
  const controller = new AbortController();
  guard(controller.signal, onListenerError);
  return controller;
}

/**
 * A guarded signal that aborts when `parent` does (with the parent's reason), for one call into
 * code the gateway does not own. `release()` detaches it from the parent once the call is over.
 */
export function guardedChild(
  parent: AbortSignal,
  onListenerError: (error: unknown) => void,
): { signal: AbortSignal; abort: (reason: unknown) => void; release: () => void } {
  const controller = guardedController(onListenerError);
  const onAbort = () => controller.abort(parent.reason);
  if (parent.aborted) controller.abort(parent.reason);
  else parent.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    release: () => parent.removeEventListener('abort', onAbort),
  };
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * The reason a transport aborts its operation's signal with when the client's request or operation is
 * over. One shared instance: the signal is aborted at the end of every request, and `abort()` without a
 * reason would build a DOMException (with its stack) each time.
 */
export const OPERATION_ENDED = new ClientDisconnectedError('The client went away before the run finished.');
