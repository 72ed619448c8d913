import { pino } from 'pino';

/** A gateway's log lines about what clients were told (graphql/error-answers.ts logErrors), kept to compare. */
export class ErrorLog {
  lines: string[] = [];
  readonly logger = pino(
    { level: 'info' },
    {
      write: (line: string) => {
        const { msg, code } = JSON.parse(line) as { msg: string; code?: string };
        if (/^(request error|unexpected error)/.test(msg)) this.lines.push(`${code ?? ''} ${msg}`);
      },
    },
  );
}
