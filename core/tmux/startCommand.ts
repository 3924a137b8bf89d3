/**
 * `#{pane_start_command}` read back into words. tmux shows the command a pane was started with as one string: the
 * argument of `new-session -- 'exec …'` as given, or several arguments joined with spaces, each quoted when it
 * needs it (`"a b"`, `'dq"x'`, `"\$HOME"`). Read with shell quoting rules, so a program whose path holds a space
 * stays one word (`~/my tools/claude` is not `~/my`). Imports nothing: the web app reads it too.
 */
/** The words of a shell-quoted command line: single quotes literal, double quotes and bare words with `\` escapes. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i] as string;
    if (quote === "'") {
      if (c === "'") quote = null;
      else word += c;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      else if (c === '\\' && i + 1 < line.length && '"\\$`\n'.includes(line[i + 1] as string)) word += line[++i];
      else word += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < line.length) {
      word += line[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/**
 * The program a pane was started with, as written (a path or a name): the first word, after an `exec` (how svc
 * starts a program alone) and after one level of quoting around the whole command (`"exec claude"`).
 */
export function startWord(startCommand: string | undefined): string | undefined {
  let words = shellWords((startCommand ?? '').trim());
  // one argument that is itself a command line (`"exec '/x y/claude' --flag"` shown quoted as a whole)
  if (words.length === 1 && /\s/.test(words[0] as string)) words = shellWords(words[0] as string);
  const first = words[0] === 'exec' ? words[1] : words[0];
  return first === undefined || first === '' ? undefined : first;
}

/** The program's name alone (its last path part): what is reported outside the sealed envelope. */
export function startProgramName(startCommand: string | undefined): string {
  const word = startWord(startCommand);
  return word ? word.slice(word.lastIndexOf('/') + 1) : '';
}
