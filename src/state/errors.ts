/** A state DSN that cannot be opened, or names a store this build does not have. */
export class StateError extends Error {}

/** A database file that cannot be opened or written: the message names the file and what to do. */
export class DatabaseFileError extends Error {}

/** The one-line explanation of why `file` could not be opened as a toolgate database. */
export function databaseFileError(file: string, err: unknown): DatabaseFileError {
  const code = (err as { code?: string }).code ?? '';
  const message = (err as Error).message;
  if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
    return new DatabaseFileError(`${file} is not a usable SQLite database (${message}): move it aside to start with an empty one, or restore it from a backup`);
  }
  if (code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_PERM') || /^E[A-Z]+$/.test(code)) {
    return new DatabaseFileError(`cannot open ${file} for writing (${code.startsWith('SQLITE') ? `${code}: ` : ''}${message}): make its folder writable, or set TOOLGATE_HOME (or --state, --audit, the configuration's state and audit) to a writable place`);
  }
  return new DatabaseFileError(`cannot open the database ${file}: ${message}`);
}
