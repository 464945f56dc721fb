import { describe, expect, it } from 'vitest';
import type { Gpu, GpuProcess, Lease } from '../../src/api/types';
import {
  EMPTY_REPLICA_INDEX,
  gpuPriceLabel,
  gpuTypeLabel,
  leaseService,
  processOwner,
  processRows,
  replicaIndex,
  replicaLookup,
  type ProcessOwner,
} from '../../src/views/gpu_model';
import { gpu, replica } from './fixtures';

// As on simulated GPUs: demo's replica demo-0 (pid 4242) holds GPU 0.
const index = replicaIndex([
  ['demo', [replica('demo-0', 4242), replica('demo-1', 0, { state: 'pending' })]],
  ['chat-2', [replica('chat-2-0', 5151)]],
]);
const proc = (pid: number, name: string, used: number | null = 1024): GpuProcess => ({ pid, name, used_memory_mb: used });
const lease = (owner: string, index = 0): Lease => ({ key: `GPU-${index}`, gpu_index: index, node: '', owner, acquired_at: '' });

describe('GPU type and price', () => {
  it.each<[string, Partial<Gpu>, string, string]>([
    ['a priced on-demand GPU', { type: 'H100-80GB', price_per_hour: 2.49, spot: false }, 'H100-80GB', '2.49 / GPU-h'],
    ['a spot GPU', { type: 'A100-80GB', price_per_hour: 0.52, spot: true }, 'A100-80GB', '0.52 / GPU-h · spot'],
    ['a free GPU (price 0 is a price)', { type: 'L4', price_per_hour: 0 }, 'L4', '0.00 / GPU-h'],
    ['an unknown price, never 0', { type: 'L40S', price_per_hour: null }, 'L40S', '—'],
    ['an unknown type', { type: null, price_per_hour: null }, '—', '—'],
    ['a daemon that predates types and prices', {}, '—', '—'],
  ])('shows %s', (_what, fields, type, price) => {
    const g = gpu(0, fields);
    expect(gpuTypeLabel(g)).toBe(type);
    expect(gpuPriceLabel(g)).toBe(price);
  });
});

describe('GPU processes', () => {
  it.each<[string, GpuProcess, ProcessOwner]>([
    ['a replica by pid', proc(4242, 'replica demo-0'), { kind: 'replica', service: 'demo', replica: 'demo-0' }],
    ['a replica of a hyphenated service', proc(5151, 'python3'), { kind: 'replica', service: 'chat-2', replica: 'chat-2-0' }],
    ['a pid no replica has, whatever its name says', proc(777, 'replica demo-0'), null],
    ['a task\'s benchmark server by name', proc(9000, 'experiment #12'), { kind: 'experiment', id: 12 }],
    ['a name that only starts like one', proc(9001, 'experiment #12b'), null],
    ['experiment #0 (no such id)', proc(9002, 'experiment #0'), null],
    ['a foreign process', proc(31337, 'python3'), null],
  ])('links %s', (_what, process, owner) => {
    expect(processOwner(process, index)).toEqual(owner);
  });

  it('skips replicas without a process (pid 0) but knows their service', () => {
    expect([...index.byPid.keys()]).toEqual([4242, 5151]);
    expect(index.serviceOf.get('demo-1')).toBe('demo');
  });

  it.each<[string, GpuProcess[] | undefined, { pid: number; name: string; memory: string }[] | null]>([
    ['an idle GPU', [], []],
    ['a daemon without process lists', undefined, null],
    ['memory as the card formats it, unknowns as a dash', [proc(4242, 'replica demo-0', 23450), proc(12, '', null),
      proc(13, 'tiny', 512)], [
      { pid: 4242, name: 'replica demo-0', memory: '22.9 GiB' },
      { pid: 12, name: '—', memory: '—' },
      { pid: 13, name: 'tiny', memory: '512 MiB' },
    ]],
  ])('tabulates %s', (_what, processes, rows) => {
    const g = gpu(0, processes === undefined ? {} : { processes });
    const got = processRows(g, index);
    expect(got === null ? null : got.map(({ pid, name, memory }) => ({ pid, name, memory }))).toEqual(rows);
  });

  it('names the service of a replica lease', () => {
    expect(leaseService('replica/demo-0', index)).toBe('demo');
    expect(leaseService('replica/gone-3', index)).toBeNull();
    expect(leaseService('job/x', index)).toBeNull();
  });
});

describe('replica lookups for process links', () => {
  const gpus = [gpu(0, { processes: [proc(4242, 'replica demo-0')] }), gpu(1, { processes: [] }), gpu(2)];

  it.each<[string, Parameters<typeof replicaLookup>, boolean]>([
    ['an empty index with a replica process', [gpus, [lease('replica/demo-0')], EMPTY_REPLICA_INDEX], true],
    ['an index that knows them all', [gpus, [lease('replica/demo-0')], index], false],
    ['a new replica lease', [gpus, [lease('replica/demo-0'), lease('replica/demo-2', 1)], index], true],
    ['a non-replica lease', [gpus, [lease('job/x')], index], false],
    ['an experiment process (named, no lookup needed)', [[gpu(0, { processes: [proc(9000, 'experiment #3')] })], [], index], false],
    ['a foreign process', [[gpu(0, { processes: [proc(31337, 'python3')] })], [], index], true],
    ['no processes, no leases', [[gpu(0, { processes: [] })], [], EMPTY_REPLICA_INDEX], false],
  ])('%s: unknown = %s', (_what, args, unknown) => {
    expect(replicaLookup(...args).unknown).toBe(unknown);
  });

  it('keys on the pids and replica owners, in any order', () => {
    const a = replicaLookup([gpu(0, { processes: [proc(2, 'x'), proc(1, 'y')] })], [lease('replica/b'), lease('replica/a'), lease('job/z')],
      EMPTY_REPLICA_INDEX).key;
    const b = replicaLookup([gpu(1, { processes: [proc(1, 'y')] }), gpu(0, { processes: [proc(2, 'x')] })],
      [lease('replica/a'), lease('replica/b')], EMPTY_REPLICA_INDEX).key;
    expect(a).toBe('1,2|replica/a,replica/b');
    expect(b).toBe(a);
  });
});
