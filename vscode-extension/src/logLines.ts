/**
 * The bridge's stderr reaches the extension's log in chunks that split where the pipe did, not where lines end:
 * a line — and an API key in it — can straddle two chunks, and a key redacted chunk by chunk is then not
 * redacted at all. `LogLines` hands on whole lines only, each at the level the bridge logged it at; a tail that
 * never gets its newline (a process that stops mid-line) goes after `idleMs`.
 */
export type LogLevel = "error" | "warn" | "info" | "debug";

export interface LogSink {
  line(level: LogLevel, text: string): void;
}

/** A line longer than this is handed on in parts (cut at a space where there is one, never inside a key). */
const maxLine = 64 * 1024;

export class LogLines {
  private partial = "";
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly sink: LogSink,
    private readonly idleMs = 250,
  ) {}

  push(chunk: string): void {
    const lines = (this.partial + chunk).split("\n");
    this.partial = lines.pop() ?? "";
    for (const line of lines) this.emit(line);
    while (this.partial.length > maxLine) {
      const space = this.partial.lastIndexOf(" ", maxLine - 1);
      const cut = space > 0 ? space + 1 : maxLine;
      this.emit(this.partial.slice(0, cut));
      this.partial = this.partial.slice(cut);
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = this.partial ? setTimeout(() => this.flush(), this.idleMs) : undefined;
  }

  /** Hands on the tail now (before a line of the extension's own, so the log keeps its order). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const tail = this.partial;
    this.partial = "";
    if (tail) this.emit(tail);
  }

  dispose(): void {
    this.flush();
  }

  private emit(raw: string): void {
    const text = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (text.trim()) this.sink.line(levelOf(text), text);
  }
}

/** The level of a line the bridge logged (`LEVEL logger: message`, bridge/cli/main.py); a traceback's lines are info. */
export function levelOf(line: string): LogLevel {
  if (/^(ERROR|CRITICAL) /.test(line)) return "error";
  if (line.startsWith("WARNING ")) return "warn";
  if (line.startsWith("DEBUG ")) return "debug";
  return "info";
}
