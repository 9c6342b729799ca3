// Hooks: polling that pauses while the tab is hidden, the hash route, element width, a clock.

import type { RefObject } from 'preact';
import { useCallback, useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './lib/errors';
import { parseHash, type Route } from './lib/router';
import { useErrors } from './errors-context';

export function useVisible(): boolean {
  const [visible, setVisible] = useState(() => typeof document === 'undefined' || !document.hidden);
  useEffect(() => {
    const on = () => setVisible(!document.hidden);
    document.addEventListener('visibilitychange', on);
    return () => document.removeEventListener('visibilitychange', on);
  }, []);
  return visible;
}

export interface Poll<T> {
  data: T | null;
  error: unknown;
  loading: boolean;
  /** Fetch again now (after an action). */
  refresh: () => void;
}

/**
 * Fetches now and every `intervalMs` while the tab is visible (not at all while hidden: it
 * resumes with a fetch as the tab shows again). `intervalMs` 0 fetches once. Failures go to
 * the error banner under `key` and clear from it on the next success. `deps` restart it.
 */
export function usePoll<T>(
  key: string,
  fetcher: ((signal: AbortSignal) => Promise<T>) | null,
  intervalMs: number,
  deps: unknown[],
): Poll<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(true);
  const visible = useVisible();
  const { report, clear } = useErrors();
  const tick = useRef<() => void>(() => {});
  const fetcherRef = useRef(fetcher);
  fetcherRef.current = fetcher;

  // A new subject (deps): forget the old one's data.
  useEffect(() => {
    setData(null);
    setError(null);
    setLoading(true);
  }, deps);

  useEffect(() => {
    if (!visible || !fetcherRef.current) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let controller: AbortController | null = null;
    const run = async () => {
      if (stopped) return;
      clearTimeout(timer);
      controller?.abort();
      const mine = new AbortController();
      controller = mine;
      try {
        const value = await fetcherRef.current!(mine.signal);
        if (stopped || mine.signal.aborted) return;
        setData(value);
        setError(null);
        clear(`poll:${key}`);
      } catch (e) {
        if (stopped || mine.signal.aborted) return;
        if (e instanceof DOMException && e.name === 'AbortError') return;
        setError(e);
        if (!(e instanceof ApiError && e.status === 401)) report(e, `poll:${key}`);
      } finally {
        if (!stopped && !mine.signal.aborted) {
          setLoading(false);
          if (intervalMs > 0) timer = setTimeout(run, intervalMs);
        }
      }
    };
    tick.current = () => void run();
    void run();
    return () => {
      stopped = true;
      clearTimeout(timer);
      controller?.abort();
      tick.current = () => {};
    };
  }, [visible, intervalMs, key, ...deps]);

  // The banner entry of a poll goes with the page.
  useEffect(() => () => clear(`poll:${key}`), [key]);

  const refresh = useCallback(() => tick.current(), []);
  return { data, error, loading, refresh };
}

export function useRoute(): Route {
  const [route, setRoute] = useState<Route>(() => parseHash(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parseHash(window.location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}

/** Goes to a hash route; `replace` leaves no history entry (an automatic choice). */
export function navigate(hash: string, replace = false): void {
  if (window.location.hash === hash) return;
  if (replace) window.location.replace(hash);
  else window.location.hash = hash;
}

/** The content width of an element, following resizes. */
export function useWidth(ref: RefObject<HTMLElement | null>, fallback = 800): number {
  const [width, setWidth] = useState(fallback);
  useLayoutEffect(() => {
    const el = ref.current;
    if (!el) return;
    setWidth(el.clientWidth || fallback);
    const ro = new ResizeObserver((entries) => {
      const w = entries[0]?.contentRect.width;
      if (w && w > 0) setWidth(Math.floor(w));
    });
    ro.observe(el);
    return () => ro.disconnect();
  }, [ref.current]);
  return width;
}

/** The time, updated every `ms` (for "so far" durations). */
export function useNow(ms = 1000, active = true): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!active) return;
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms, active]);
  return now;
}
