// Compile-only check of the store declarations (pkg/stores/*.d.ts): every store is a
// SessionStore, and a store is what compact()'s host needs.
import { compact, ledgerRows, ledgerTokensEstimator, type Calibration, type LedgerRow, type ModelMessage, type RuntimeEvent, type UsageFact } from 'contextfold';
import { MemoryStore, type SessionStore } from 'contextfold/stores/memory';
import { JsonlFileStore, type StorageRepair } from 'contextfold/stores/jsonl';
import { SqliteStore } from 'contextfold/stores/sqlite';
import { PostgresStore, type PgPoolLike, type PostgresErrorFields } from 'contextfold/stores/postgres';
import { IndexedDbStore } from 'contextfold/stores/indexeddb';

declare const events: RuntimeEvent[];
declare const pool: PgPoolLike;

export async function useStores(): Promise<number> {
  const stores: SessionStore[] = [
    await MemoryStore.open({ sessionId: 's' }),
    await JsonlFileStore.open({ directory: '/tmp/ledger', sessionId: 's' }),
    await SqliteStore.open({ path: '/tmp/ledger.sqlite', sessionId: 's' }),
    await IndexedDbStore.open({ name: 'ledger', sessionId: 's' }),
    await PostgresStore.open({ connectionString: 'postgres://app@db/ledger', sessionId: 's' }),
  ];
  const shared = await PostgresStore.open({ pool, sessionId: 's' });
  const added: number = await shared.refresh();
  const target: string | null = shared.target;
  const failure = null as unknown as PostgresErrorFields;
  const retry: boolean = failure.retryable && failure.code === 'storage_serialization_failure';
  const jsonl = await JsonlFileStore.open({ directory: '/tmp/ledger', sessionId: 't' });
  const repairs: StorageRepair[] = jsonl.storageDiagnostics;
  const rows: LedgerRow[] = ledgerRows(events);
  const estimator: string = ledgerTokensEstimator();
  for (const store of stores) {
    await store.appendEvents(events);
    await compact(
      { events: store.log, checkpoint: store.checkpoint, trigger: 'manual' },
      {
        summarize: async () => ({ text: '', finishReason: 'stop' }),
        appendCheckpoint: (checkpoint) => store.appendCheckpoint(checkpoint),
        recordCircuit: (circuit) => store.recordCircuit(circuit),
      },
    );
    await store.recordUsage({ provider: 'p', model: 'm', estimatedInputTokens: 1000, kind: 'response', inputTokens: 1100 });
    const calibration: Calibration | null = store.calibration;
    const facts: UsageFact[] = store.usageFacts;
    const resumed: ModelMessage[] = [...store.modelMessages(), { role: 'user', content: 'go on' }];
    if (calibration === null && facts.length > 0 && resumed.length === 0) throw new Error('unreachable');
    const verified: boolean = (await store.verify()).ok;
    const current = store.checkpoints().filter((c) => 'current' in c && c.current).length;
    if (!verified || current > 1) throw new Error('unverified');
    await store.close();
  }
  return repairs.length + rows.length + estimator.length + added + (target?.length ?? 0) + (retry ? 1 : 0);
}
