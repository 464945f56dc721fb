// Pure helpers of the GPUs view: each GPU's type and price, who holds its lease, and who
// each process on a GPU is (a service's replica, a task's experiment), for links.

import type { Gpu, GpuProcess, Lease, Replica } from '../api/types';
import { MISSING, formatMib } from '../format';

// Lease owners per GPU index. A lease names its GPU by key (the GPU's uuid, or
// "<node>#<index>" when the backend has no uuid) and gpu_index; the uuid match wins.
export function leaseHolders(gpus: readonly Gpu[], leases: readonly Lease[]): Map<number, string[]> {
  const uuids = new Set(gpus.map((g) => g.uuid).filter((u) => u.length > 0));
  const holders = new Map<number, string[]>();
  for (const gpu of gpus) {
    const owners = leases
      .filter((lease) => (uuids.has(lease.key) ? lease.key === gpu.uuid : lease.gpu_index === gpu.index))
      .map((lease) => lease.owner);
    holders.set(gpu.index, [...new Set(owners)]);
  }
  return holders;
}

// The GPU's type key ("H100-80GB"); MISSING when unknown or from a daemon that predates types.
export function gpuTypeLabel(gpu: Gpu): string {
  return gpu.type ? gpu.type : MISSING;
}

// "2.49 / GPU-h", with " · spot" for preemptible capacity; MISSING when the price is unknown
// (null, or a daemon that predates prices): an unknown price is never shown as 0.
export function gpuPriceLabel(gpu: Gpu): string {
  const price = gpu.price_per_hour;
  const text = price === null || price === undefined || !Number.isFinite(price)
    ? MISSING : `${price.toFixed(2)} / GPU-h`;
  return gpu.spot === true ? `${text} · spot` : text;
}

const REPLICA_OWNER = 'replica/';

// "replica/chat-3" -> "chat-3" for display; other owners unchanged.
export function ownerLabel(owner: string): string {
  return owner.startsWith(REPLICA_OWNER) ? owner.slice(REPLICA_OWNER.length) : owner;
}

// The services' replicas by pid and by id. Neither a lease ("replica/chat-3") nor a GPU
// process names its service, so the view asks each service for its replicas
// (/v1/services/NAME/replicas) and looks them up here.
export interface ReplicaIndex {
  byPid: Map<number, { service: string; replica: string }>;
  serviceOf: Map<string, string>; // replica id -> service
}

export function replicaIndex(replicasByService: Iterable<readonly [string, readonly Replica[]]>): ReplicaIndex {
  const index: ReplicaIndex = { byPid: new Map(), serviceOf: new Map() };
  for (const [service, replicas] of replicasByService) {
    for (const r of replicas) {
      index.serviceOf.set(r.id, service);
      if (r.pid > 0) index.byPid.set(r.pid, { service, replica: r.id });
    }
  }
  return index;
}

export const EMPTY_REPLICA_INDEX: ReplicaIndex = { byPid: new Map(), serviceOf: new Map() };

export type ProcessOwner =
  | { kind: 'replica'; service: string; replica: string }
  | { kind: 'experiment'; id: number }
  | null;

// The daemon names a task's benchmark server so on simulated GPUs; its pid is no replica's.
const EXPERIMENT_NAME = /^experiment #([1-9][0-9]{0,15})$/;

// A replica by pid wins. With real GPUs that is the process the daemon started: a server
// that runs its GPU work in child processes (vLLM's workers with tensor parallelism) shows
// pids no replica has, and those stay unlinked (the card's lease still names the replica).
export function processOwner(process: GpuProcess, index: ReplicaIndex): ProcessOwner {
  const replica = index.byPid.get(process.pid);
  if (replica) return { kind: 'replica', ...replica };
  const experiment = EXPERIMENT_NAME.exec(process.name);
  if (experiment?.[1]) return { kind: 'experiment', id: Number(experiment[1]) };
  return null;
}

export interface ProcessRow {
  pid: number;
  name: string;
  memory: string; // as the card formats memory: MiB, GiB above 1 GiB
  owner: ProcessOwner;
}

// The card's process table, in the API's order; null when the daemon reports no process
// list at all (one that predates it), which the card then leaves out rather than saying
// "no processes".
export function processRows(gpu: Gpu, index: ReplicaIndex): ProcessRow[] | null {
  if (!Array.isArray(gpu.processes)) return null;
  return gpu.processes.map((p) => ({
    pid: p.pid,
    name: p.name || MISSING,
    memory: formatMib(p.used_memory_mb),
    owner: processOwner(p, index),
  }));
}

// The service of a lease owner ("replica/chat-3" -> "chat"), when the index knows it.
export function leaseService(owner: string, index: ReplicaIndex): string | null {
  return owner.startsWith(REPLICA_OWNER) ? index.serviceOf.get(ownerLabel(owner)) ?? null : null;
}

// What the GPUs show that a replica lookup could name: every process pid and replica lease
// owner, as one key. The view asks for the services' replicas again only when something
// here is unknown to its index and the key differs from the last lookup's, so a process
// that belongs to no replica (a foreign job) costs one lookup, not one per poll.
export function replicaLookup(gpus: readonly Gpu[], leases: readonly Lease[], index: ReplicaIndex):
    { key: string; unknown: boolean } {
  const processes = gpus.flatMap((g) => g.processes ?? []);
  const owners = [...new Set(leases.map((l) => l.owner).filter((o) => o.startsWith(REPLICA_OWNER)))].sort();
  const unknown = processes.some((p) => processOwner(p, index) === null)
    || owners.some((o) => !index.serviceOf.has(ownerLabel(o)));
  const pids = [...new Set(processes.map((p) => p.pid))].sort((a, b) => a - b);
  return { key: `${pids.join(',')}|${owners.join(',')}`, unknown };
}
