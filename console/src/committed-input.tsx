// A text field whose value is a filter applied on commit (Enter or leaving the field). What the
// operator typed is their own until then: the page re-renders under it (a live tail adding rows, a
// fetch finishing), and a field bound to the applied value would be reset to it by each render,
// dropping the text half-typed. The draft follows the applied value only when that value changes
// (a link followed, the back button, the filter applied).
import { useEffect, useState } from 'preact/hooks';

export function CommittedInput(props: {
  label: string;
  /** The label's class ('wide' for a long value). */
  class?: string;
  name: string;
  value: string;
  placeholder?: string;
  onCommit: (v: string) => void;
}) {
  const [draft, setDraft] = useState(props.value);
  useEffect(() => setDraft(props.value), [props.value]);
  return (
    <label class={props.class}>
      {props.label}
      <input
        name={props.name}
        value={draft}
        placeholder={props.placeholder}
        onInput={(e) => setDraft((e.target as HTMLInputElement).value)}
        onChange={(e) => props.onCommit((e.target as HTMLInputElement).value.trim())}
      />
    </label>
  );
}
