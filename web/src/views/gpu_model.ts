// Pure helpers of the GPUs view: who holds each GPU's lease.

import type { Gpu, Lease } from '../api/types';

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

// "replica/chat-3" -> "chat-3" for display; other owners unchanged.
export function ownerLabel(owner: string): string {
  return owner.startsWith('replica/') ? owner.slice('replica/'.length) : owner;
}
