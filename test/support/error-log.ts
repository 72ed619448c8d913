import { pino } from 'pino';

/**
 * A gateway's log lines about what clients were told (graphql/error-answers.ts logErrors), kept to compare: each as
 * its level, code, message and the message of the error it carries.
 */
export class ErrorLog {
  lines: string[] = [];
  readonly logger = pino(
    { level: 'info' },
    {
      write: (line: string) => {
        const { level, msg, code, err } = JSON.parse(line) as {
          level: number;
          msg: string;
          code?: string;
          err?: { message?: string };
        };
        if (/^(request error|unexpected error)/.test(msg)) {
          this.lines.push([level, code ?? '-', msg, err?.message ?? '-'].join(' '));
        }
      },
    },
  );
}
