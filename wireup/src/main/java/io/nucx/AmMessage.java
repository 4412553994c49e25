package io.nucx;

import io.netty.buffer.ByteBuf;
import io.netty.util.concurrent.Future;

/**
 * An active message given to its {@link AmHandler} (UCX's AM receive callback and {@code ucp_am_recv_param_t}): its
 * user header, and its data either here (eager) or still at the sender (rendezvous: {@link #isRendezvous()}), to be
 * received into a buffer of the handler's choosing ({@link #receiveData}), during the call or later.
 *
 * <p><b>Lifetime.</b> The message, its header and its eager data are valid during the handler's call and released
 * when it returns, unless the handler called {@link #keep()}: then they stay valid until {@link #release()}, which
 * its holder must call. A rendezvous message released without its data having been asked for is dropped: the
 * sender's future completes successfully, as UCX's does when the callback does not receive the data. Calls on a
 * message after its release fail with {@link IllegalStateException} (release itself does nothing then), also when
 * the worker already hands a later message in the same memory: a short message is read where the transport put it,
 * and its bookkeeping is reused once released, so a stream of them makes no garbage beyond this handle.
 */
public interface AmMessage {

    /** The id it was sent to. */
    int id();

    /** The user header (empty when none was sent); valid while the message is. */
    ByteBuf header();

    /** Bytes of data. */
    long dataLength();

    /** Whether the data are still at the sender (UCX's {@code UCP_AM_RECV_ATTR_FLAG_RNDV}). */
    boolean isRendezvous();

    /**
     * The data of an eager message; valid while the message is (retain it to keep it longer).
     *
     * @throws IllegalStateException for a rendezvous message ({@link #receiveData} them instead)
     */
    ByteBuf data();

    /**
     * The endpoint to answer on: the peer's endpoint to the sender, when the sender asked for a reply endpoint
     * ({@link Endpoint#amSend(int, ByteBuf, ByteBuf, boolean)}); null otherwise.
     */
    Endpoint replyEndpoint();

    /** Keeps the message valid after the handler returns, until {@link #release()}. Inside the handler only. */
    AmMessage keep();

    /**
     * Writes the data into {@code into} at its writer index (growing it if it may grow) and advances it: copied now
     * for an eager message; asked for and received by the rendezvous protocols for a rendezvous one (UCX's
     * {@code ucp_am_recv_data_nbx}). The future completes when all the data are in {@code into}; it fails with
     * {@link IllegalArgumentException} when {@code into} cannot hold them, {@link IllegalStateException} when the
     * message was released or its data received already, or with the endpoint's failure. Once per message; any
     * thread. The message must still be {@link #release() released} if it was kept.
     */
    Future<Void> receiveData(ByteBuf into);

    /** Releases the message (a rendezvous one whose data were not asked for completes its sender). Idempotent. */
    void release();
}
