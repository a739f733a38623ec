// The PostgreSQL client boundary of `contextfold/stores/postgres`: loading the optional `pg`
// package, printing a connection target without its password, one transaction per write on a
// pooled connection, and the typed errors. Every failure of the server, the pool or the
// configuration becomes a ContextfoldError with the stable code the native host's `PgError`
// gives the same failure (host/src/ledger/postgres/error.rs), `retryable` as its
// `is_retryable()`, and the SQLSTATE when the server reported one.
import { createRequire } from 'node:module';
import path from 'node:path';
import { ContextfoldError } from 'contextfold';

/** The SQLSTATE the append-only triggers raise (the host's `APPEND_ONLY_SQLSTATE`). */
export const APPEND_ONLY_SQLSTATE = 'CFA01';

/**
 * The `pg` module: `given` when the caller passed one, else `import('pg')` from this package,
 * else `pg` as the application resolves it (from the working directory: a package linked with
 * `npm link` or `file:` resolves its imports from its own folder, where `pg` is not installed).
 * Throws `store_unsupported_runtime` when none is found.
 */
export async function loadPg(given) {
  if (given) return given.default ?? given;
  try {
    const module = await import('pg');
    return module.default ?? module;
  } catch (first) {
    try {
      return createRequire(path.join(process.cwd(), 'index.js'))('pg');
    } catch {
      throw new ContextfoldError(
        'store_unsupported_runtime',
        "PostgresStore needs the `pg` package (npm install pg): it is a peer dependency of contextfold, loaded only by contextfold/stores/postgres",
        { cause: first },
      );
    }
  }
}

/**
 * `url` as it may be printed: `postgres://user:***@host:port/db` (the password replaced, the
 * query dropped, since it may carry one too). Throws `storage_config_invalid`, without
 * repeating the text, when it is not a postgres:// or postgresql:// URL.
 */
export function redactUrl(url) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    parsed = null;
  }
  if (!parsed || (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:')) {
    throw new ContextfoldError('storage_config_invalid', 'the PostgreSQL connection string is not a postgres:// URL (it is not repeated here: it may hold a password)');
  }
  const user = parsed.username ? `${parsed.username}${parsed.password ? ':***' : ''}@` : '';
  return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}`;
}

/** Whether `error` is the server's report (pg's `DatabaseError`: a SQLSTATE and a severity). */
function sqlstateOf(error) {
  return typeof error?.code === 'string' && typeof error?.severity === 'string' ? error.code : null;
}

/** Messages of pg and Node for a connection that broke while in use. */
const LOST = /Connection terminated|connection error|not queryable|ECONNRESET|EPIPE|ETIMEDOUT|socket/i;

/** The code and retryability of a server's SQLSTATE (the host's `PgError::from_client`). */
function classify(state) {
  switch (state) {
    case '40001':
    case '40P01':
      return ['storage_serialization_failure', true];
    case '53100':
      return ['storage_disk_full', false];
    case '57014':
      return ['storage_statement_timeout', false];
    case '42501':
      return ['storage_permission_denied', false];
    case APPEND_ONLY_SQLSTATE:
      return ['storage_append_only', false];
    default:
      if (state.startsWith('08') || state === '57P01' || state === '57P02' || state === '57P03') {
        return ['storage_connection_lost', true];
      }
      return ['storage_postgres', false];
  }
}

/** Node's certificate checks and pg's refusal of a server without TLS. */
const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_(GET_ISSUER_CERT|VERIFY_LEAF_SIGNATURE)|CERT_)/;

/** Whether `error` is a failed TLS handshake. */
function tlsFailure(error) {
  return (typeof error?.code === 'string' && TLS_CODES.test(error.code))
    || /does not support SSL connections/.test(String(error?.message));
}

/**
 * The typed error of a failure while `operation` ran. A ContextfoldError (a refusal of the store
 * itself) is returned as it is. `connecting`: the failure came from getting a connection, so one
 * without a SQLSTATE is `storage_unavailable` (the server unreachable, the pool's wait exceeded).
 */
export function pgError(operation, error, { connecting = false, target = null } = {}) {
  if (error instanceof ContextfoldError) return error;
  const state = sqlstateOf(error);
  let code;
  let retryable;
  if (state) {
    [code, retryable] = classify(state);
  } else if (tlsFailure(error)) {
    // The server's certificate is not trusted or not for the host, or it refused TLS: the
    // same server fails the same way (the host's `storage_tls_failed`).
    [code, retryable] = ['storage_tls_failed', false];
  } else if (connecting) {
    [code, retryable] = ['storage_unavailable', true];
  } else if (LOST.test(String(error?.message)) || (typeof error?.code === 'string' && error.code.startsWith('E'))) {
    [code, retryable] = ['storage_connection_lost', true];
  } else {
    [code, retryable] = ['storage_postgres', false];
  }
  const where = target ? ` (${target})` : '';
  const detail = String(error?.message ?? error);
  const typed = new ContextfoldError(code, `PostgreSQL ${code.replace('storage_', '').replace(/_/g, ' ')} while ${operation}${where}: ${detail}`, { cause: error });
  typed.retryable = retryable;
  typed.sqlstate = state;
  typed.operation = operation;
  return typed;
}

/** Runs one statement on `client`; a failure is the typed error of `operation`. */
export async function query(client, operation, text, values) {
  try {
    return await client.query(text, values);
  } catch (error) {
    throw pgError(operation, error);
  }
}

/** A connection from `pool`, or `storage_unavailable` (and the like). */
export async function connect(pool, operation, target = null) {
  try {
    return await pool.connect();
  } catch (error) {
    throw pgError(operation, error, { connecting: true, target });
  }
}

/**
 * Runs `fn(client)` in one transaction on a pooled connection (`readOnly`: a REPEATABLE READ
 * snapshot; `target`: the redacted URL for a connection error): COMMIT when it resolves, ROLLBACK
 * when it throws (the error is rethrown; a connection that cannot roll back is discarded, not
 * returned to the pool). Nothing of the transaction is committed when this rejects, except after
 * a lost COMMIT acknowledgement (`storage_connection_lost`: the outcome is unknown).
 */
export async function transaction(pool, operation, fn, { target = null, readOnly = false } = {}) {
  const client = await connect(pool, operation, target);
  let discard;
  try {
    // A read sees one snapshot: the events, the recorded checkpoints and the circuit agree.
    await query(client, `starting a transaction (${operation})`, readOnly ? 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY' : 'BEGIN');
    const result = await fn(client);
    await query(client, `committing (${operation})`, 'COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      discard = rollbackError;
    }
    throw error;
  } finally {
    client.release(discard);
  }
}

/** Takes the session's write lock for the rest of the transaction (the host's `lock_session`). */
export function lockSession(client, sessionId) {
  return query(client, "taking the session's write lock", 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [sessionId]);
}
