import { useLayoutEffect, useRef } from 'preact/hooks';
import { lineOffset } from '../lib/jsonpos';
import type { SpecProblem } from '../lib/newjob';

/** Problems listed under the editor; more are counted. */
const SHOWN = 40;

/**
 * A monospace JSON editor with line numbers beside it (lines with a problem marked), and its
 * problems listed under it with their lines: a click on one puts the caret there. A plain
 * textarea: the keyboard works as everywhere (Tab leaves it).
 */
export function SpecEditor({
  text,
  onChange,
  problems,
  status,
  control,
}: {
  text: string;
  onChange: (text: string) => void;
  problems: SpecProblem[];
  /** What to say when there is no problem. */
  status: string;
  /** Set to a function that shows a problem's line (the caret there when `focus`). */
  control?: { current: ((p: SpecProblem, focus: boolean) => void) | null };
}) {
  const area = useRef<HTMLTextAreaElement>(null);
  const gutter = useRef<HTMLDivElement>(null);
  const lineCount = text.split('\n').length;
  const marked = new Map<number, string>();
  for (const p of problems) if (p.line !== null && !marked.has(p.line)) marked.set(p.line, p.text);

  const follow = () => {
    if (gutter.current && area.current) gutter.current.scrollTop = area.current.scrollTop;
  };
  useLayoutEffect(follow, [text]);

  const goTo = (p: SpecProblem, focus = true) => {
    const el = area.current;
    if (!el || p.line === null) return;
    const at = Math.min(text.length, lineOffset(text, p.line) + Math.max(0, (p.column ?? 1) - 1));
    if (focus) {
      el.focus();
      el.setSelectionRange(at, at);
    }
    const lineHeight = parseFloat(getComputedStyle(el).lineHeight) || 18;
    // The line a few lines from the top, unless it shows already.
    const top = (p.line - 1) * lineHeight;
    if (top < el.scrollTop || top > el.scrollTop + el.clientHeight - 2 * lineHeight) el.scrollTop = Math.max(0, top - 3 * lineHeight);
    follow();
  };
  if (control) control.current = goTo;

  return (
    <div class="spec-edit">
      <div class="code-box">
        <div class="gutter" ref={gutter} aria-hidden="true">
          {Array.from({ length: lineCount }, (_, i) => (
            <div key={i} class={marked.has(i + 1) ? 'bad' : undefined} title={marked.get(i + 1)}>
              {i + 1}
            </div>
          ))}
        </div>
        <textarea
          ref={area}
          class="spec-editor"
          data-testid="newjob-editor"
          wrap="off"
          spellcheck={false}
          autocomplete="off"
          rows={Math.min(36, Math.max(16, lineCount + 1))}
          value={text}
          onInput={(e) => onChange(e.currentTarget.value)}
          onScroll={follow}
          placeholder="Pick a template above, or write a job spec as JSON."
          aria-label="Job spec (JSON)"
          aria-invalid={problems.length > 0}
          aria-describedby="spec-problems"
        />
      </div>
      <div id="spec-problems" aria-live="polite">
        {problems.length === 0 ? (
          <div class="status-line tone-ok" data-testid="spec-ok">
            {status}
          </div>
        ) : (
          <ul class="spec-problems" data-testid="spec-problems">
            {problems.slice(0, SHOWN).map((p, i) => (
              <li key={`${p.source}:${p.offset ?? 'x'}:${i}`}>
                <button
                  type="button"
                  class={`problem source-${p.source}`}
                  data-testid="spec-error"
                  data-source={p.source}
                  data-line={p.line ?? ''}
                  data-pointer={p.pointer ?? ''}
                  onClick={() => goTo(p)}
                  title={p.line === null ? undefined : `Go to line ${p.line}`}
                >
                  <span class="problem-where">{p.line === null ? 'spec' : `line ${p.line}`}:</span>{' '}
                  <span class="problem-text">{p.source === 'server' ? `the server refused it: ${p.text}` : p.text}</span>
                </button>
              </li>
            ))}
            {problems.length > SHOWN && <li class="muted">and {problems.length - SHOWN} more</li>}
          </ul>
        )}
      </div>
    </div>
  );
}
