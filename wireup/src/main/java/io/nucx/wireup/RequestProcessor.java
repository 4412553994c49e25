package io.nucx.wireup;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.nucx.ErrorMode;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.LimitExceededException;
import io.nucx.protocol.ProtocolException;

/**
 * What a worker does with a wireup REQUEST that arrives on a lane a peer connected (UCX's
 * {@code ucp_wireup_process_request} and {@code ep_match.c}). Loop only, but in step with {@code connect} on other
 * threads through the {@link EndpointMatch} lock.
 * <ol>
 *   <li>An endpoint of ours made by {@code connect} to that peer with the same connection number, still waiting for
 *       its REPLY (EXPECTED), means both sides connected at once. The request of the higher-uuid worker is ignored: if
 *       the peer's uuid is higher we ignore this one (ours, on our own lane, will be answered); if ours is higher, our
 *       endpoint pairs with this request and answers it ({@link WireupHandler#pairWithRequest}).</li>
 *   <li>Otherwise an endpoint is created on demand (so protocols can reply), queued UNEXPECTED for a later
 *       {@code connect} to adopt, and answered with REPLY; its p2p connections whose two sides both connect (rdma)
 *       are connected to the REQUEST's addresses first ({@link WireupHandler#answer}).</li>
 * </ol>
 * Loopback (our own uuid) is not matched: both ends would draw from the same sequence. Nor is a REQUEST of an endpoint
 * made through a listener ({@link WireupMessage#listened()}, UCX's client-server flow): its endpoint goes to the
 * listener waiting for its token ({@link DefaultWorker#expectListened}) once the REPLY is out; with no such listener
 * the peer is told so by EP_REMOVED.
 */
final class RequestProcessor {

    /** What became of a REQUEST. */
    sealed interface Outcome {
        /** The request belongs to this endpoint: created for it, or the EXPECTED one it paired with. */
        record Accepted(EndpointChannel endpoint) implements Outcome {
        }

        /** Simultaneous connect, and the peer's uuid is higher: its request loses; our own REQUEST wins. */
        record Ignored(EndpointChannel expected) implements Outcome {
        }

        /** The EXPECTED endpoint is not registered yet (connect runs on another thread): ask again later. */
        record Retry() implements Outcome {
        }

        /** A listened REQUEST no listener waits for: the peer was told why (EP_REMOVED), the lane closes. */
        record Refused() implements Outcome {
        }
    }

    private final DefaultWorker worker;

    RequestProcessor(DefaultWorker worker) {
        this.worker = worker;
    }

    Outcome onRequest(WireupMessage request, Channel lane) {
        assert worker.eventLoop().inEventLoop();
        WorkerAddress remote = request.address();
        if (worker.auth() != null) {
            worker.auth().check(request.proof(), remote.uuid(), worker.uuid(), request.connSn());
        }
        boolean listened = request.listened();
        boolean matched = remote.uuid() != worker.uuid() && !listened;
        ErrorMode mode = request.errorMode();
        if (listened && !worker.expectsListened(request.connSn())) {
            lane.writeAndFlush(WireupMessage.epRemoved(WireupMessage.INVALID_EP_ID, request.srcEpId(), "worker "
                    + worker.name() + " has no listener waiting for connection token " + request.connSn()
                    + " (the listener closed, or its accepted channel did)").toFrame(lane.alloc()))
                    .addListener(ChannelFutureListener.CLOSE);
            return new Outcome.Refused();
        }
        EndpointMatch<EndpointChannel> match = worker.match();
        EndpointChannel expected = null;
        EndpointChannel ep = null;
        // Looking for an EXPECTED endpoint and queueing an UNEXPECTED one is one step against a concurrent connect:
        // otherwise a connect between the two would queue an EXPECTED endpoint and we would create a second pair.
        synchronized (match) {
            if (matched) {
                expected = match.expected(remote.uuid(), request.connSn());
            }
            if (expected == null) {
                // Refused before anything exists for the peer: no endpoint, no lane selection, no buffer.
                EndpointChannel pending = matched ? match.unexpected(remote.uuid(), request.connSn()) : null;
                if (pending != null) {
                    throw new ProtocolException("wireup REQUEST for connection #" + request.connSn() + " of "
                            + Long.toHexString(remote.uuid()) + ", which " + pending + " serves already (a replayed "
                            + "or duplicated REQUEST)");
                }
                int max = worker.settings().maxEndpoints();
                if (worker.endpointCount() >= max) {
                    throw new LimitExceededException("NUCX_MAX_ENDPOINTS", max, "wireup REQUEST from "
                            + remote.name() + " (" + Long.toHexString(remote.uuid()) + ") refused: the worker holds "
                            + worker.endpointCount() + " endpoints");
                }
                LaneSelector.Lanes lanes = worker.selectLanes(remote, mode);
                ep = EndpointChannel.accepted(worker, worker.newEndpointId(), remote, lanes, mode, request, lane);
                if (listened) {
                    // Its channel (NucxChannel) paces the stream with read(): no read may be asked before it is
                    // attached, or the first bytes would reach it unasked.
                    ep.config().setAutoRead(false);
                }
                worker.registerEndpoint(ep); // on the loop: registered before a connect on another thread adopts it
                if (matched) {
                    match.addUnexpected(remote.uuid(), request.connSn(), ep);
                }
            }
        }
        if (expected != null) {
            if (!expected.isRegistered()) {
                return new Outcome.Retry();
            }
            if (Long.compareUnsigned(remote.uuid(), worker.uuid()) > 0) {
                worker.counters().counter(Worker.WIREUP_REQUEST_IGNORED).increment();
                return new Outcome.Ignored(expected);
            }
            worker.counters().counter(Worker.WIREUP_REQUEST_PAIRED).increment();
            match.remove(remote.uuid(), request.connSn(), expected);
            expected.wireup().pairWithRequest(request, lane);
            return new Outcome.Accepted(expected);
        }
        WireupHandler.sendReply(ep, lane, WireupHandler.answer(ep, request));
        if (worker.isClosed()) {
            ep.close();
        } else if (listened) {
            worker.takeListened(request.connSn(), ep);
        }
        return new Outcome.Accepted(ep);
    }
}
