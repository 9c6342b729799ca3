// The global error banner's state: messages by key (a poll's key, or one per action).

import { createContext, type ComponentChildren } from 'preact';
import { useCallback, useContext, useMemo, useState } from 'preact/hooks';
import { errorToMessage } from './lib/errors';

export interface BannerMessage {
  key: string;
  text: string;
  transient: boolean;
}

interface ErrorsApi {
  messages: BannerMessage[];
  /** Shows an error (replacing the one under the same key). */
  report: (err: unknown, key?: string) => void;
  clear: (key: string) => void;
  clearAll: () => void;
}

const noop: ErrorsApi = { messages: [], report: () => {}, clear: () => {}, clearAll: () => {} };
const Ctx = createContext<ErrorsApi>(noop);

let seq = 0;

export function ErrorsProvider({ children }: { children: ComponentChildren }) {
  const [messages, setMessages] = useState<BannerMessage[]>([]);
  const report = useCallback((err: unknown, key?: string) => {
    const m = errorToMessage(err);
    if (m.signOut) return; // The app goes back to sign-in and says why there.
    const k = key ?? `action:${++seq}`;
    setMessages((list) => {
      const rest = list.filter((x) => x.key !== k && x.text !== m.text);
      return [...rest, { key: k, text: m.text, transient: m.transient }];
    });
  }, []);
  const clear = useCallback((key: string) => {
    setMessages((list) => (list.some((x) => x.key === key) ? list.filter((x) => x.key !== key) : list));
  }, []);
  const clearAll = useCallback(() => setMessages([]), []);
  const value = useMemo(() => ({ messages, report, clear, clearAll }), [messages, report, clear, clearAll]);
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}

export function useErrors(): ErrorsApi {
  return useContext(Ctx);
}
