import { useErrors } from '../errors-context';

/** Every error of the page at the top: what went wrong and what to do. */
export function ErrorBanner() {
  const { messages, clear } = useErrors();
  if (messages.length === 0) return null;
  return (
    <div class="error-banner" role="alert" data-testid="error-banner">
      {messages.map((m) => (
        <div class="error-line" key={m.key}>
          <span class="error-icon" aria-hidden="true">
            !
          </span>
          <span class="error-text">{m.text}</span>
          <button type="button" class="btn small ghost" onClick={() => clear(m.key)} aria-label="Dismiss">
            ✕
          </button>
        </div>
      ))}
    </div>
  );
}
