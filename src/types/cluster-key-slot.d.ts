// cluster-key-slot (ioredis's own dependency) has no types of its own.
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot of a key (CRC16 of its hash tag, or of the whole key, modulo 16384). */
  export default function calculateSlot(key: string): number;
}
