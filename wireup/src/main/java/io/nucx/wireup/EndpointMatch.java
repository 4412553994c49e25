package io.nucx.wireup;

import java.util.HashMap;
import java.util.Map;

/**
 * Pairs endpoints of the two sides of a connection by (peer worker uuid, connection sequence number), as UCX's
 * {@code ep_match.c}. Each worker numbers its {@code connect} calls to one peer uuid 0, 1, 2... (16 bits, wrapping);
 * when both applications create their endpoints to each other in the same order, the numbers line up.
 * <ul>
 *   <li><b>EXPECTED</b>: endpoints made by {@code connect} whose REQUEST has not been answered yet. A REQUEST from that
 *       peer with the same number finds it instead of creating an endpoint (simultaneous connect).</li>
 *   <li><b>UNEXPECTED</b>: endpoints created on demand by a REQUEST that matched nothing. A later {@code connect} to
 *       that peer drawing the same number adopts it instead of creating a second one.</li>
 * </ul>
 * {@code connect} may run on any thread while REQUESTs are handled on the worker's loop, so every method locks this
 * object; the critical sections are a few map operations. Generic in the endpoint type so the rules can be tested
 * alone.
 */
final class EndpointMatch<E> {

    /** Per peer uuid: the next number and the two queues. */
    private static final class Peer<E> {
        int nextSn;
        final Map<Integer, E> expected = new HashMap<>();
        final Map<Integer, E> unexpected = new HashMap<>();
    }

    private final Map<Long, Peer<E>> peers = new HashMap<>();

    /** Draws the next connection number to {@code uuid}: 0, 1, 2... per peer, 16 bits as on the wire. */
    synchronized int nextConnSn(long uuid) {
        Peer<E> p = peers.computeIfAbsent(uuid, k -> new Peer<>());
        int sn = p.nextSn;
        p.nextSn = (sn + 1) & 0xffff;
        return sn;
    }

    /** Removes and returns the on-demand endpoint for (uuid, sn), or null. */
    synchronized E takeUnexpected(long uuid, int sn) {
        Peer<E> p = peers.get(uuid);
        return p == null ? null : p.unexpected.remove(sn);
    }

    /** The on-demand endpoint waiting for (uuid, sn) to be adopted, or null (it stays queued). */
    synchronized E unexpected(long uuid, int sn) {
        Peer<E> p = peers.get(uuid);
        return p == null ? null : p.unexpected.get(sn);
    }

    /** The endpoint {@code connect} made for (uuid, sn) that still waits for its REPLY, or null. */
    synchronized E expected(long uuid, int sn) {
        Peer<E> p = peers.get(uuid);
        return p == null ? null : p.expected.get(sn);
    }

    synchronized void addExpected(long uuid, int sn, E ep) {
        putNew(peers.computeIfAbsent(uuid, k -> new Peer<>()).expected, sn, ep, "expected");
    }

    synchronized void addUnexpected(long uuid, int sn, E ep) {
        putNew(peers.computeIfAbsent(uuid, k -> new Peer<>()).unexpected, sn, ep, "unexpected");
    }

    private static <E> void putNew(Map<Integer, E> queue, int sn, E ep, String name) {
        E old = queue.putIfAbsent(sn, ep);
        if (old != null && old != ep) {
            throw new IllegalStateException("connection #" + sn + " is already " + name + " for " + old);
        }
    }

    /** Takes {@code ep} out of the on-demand queue: no {@code connect} adopts it any more. */
    synchronized void removeUnexpected(long uuid, int sn, E ep) {
        Peer<E> p = peers.get(uuid);
        if (p != null) {
            p.unexpected.remove(sn, ep);
        }
    }

    /** Takes {@code ep} out of both queues (it was paired, failed or closed); the sequence numbers stay. */
    synchronized void remove(long uuid, int sn, E ep) {
        Peer<E> p = peers.get(uuid);
        if (p != null) {
            p.expected.remove(sn, ep);
            p.unexpected.remove(sn, ep);
            if (p.nextSn == 0 && p.expected.isEmpty() && p.unexpected.isEmpty()) {
                peers.remove(uuid); // a peer we never connected to: nothing left to remember (forged uuids too)
            }
        }
    }

    /** Peers with state here; for tests. */
    synchronized int peerCount() {
        return peers.size();
    }

    /** Sizes of the two queues for {@code uuid}, for tests: {expected, unexpected}. */
    synchronized int[] sizes(long uuid) {
        Peer<E> p = peers.get(uuid);
        return p == null ? new int[2] : new int[] {p.expected.size(), p.unexpected.size()};
    }
}
