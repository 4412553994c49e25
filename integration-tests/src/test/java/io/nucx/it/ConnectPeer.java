package io.nucx.it;

import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.transport.testing.LeakRecorder;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * The other process of {@link TwoProcessWireupTest}. Starts a worker (settings from NUCX_* in its environment),
 * prints {@code ADDRESS <hex>}, reads {@code PEER <hex>}, then obeys lines on standard input:
 * <ul>
 *   <li>{@code ROUND r}: connects to the peer at once and runs {@link ConnectRound} as side 1; prints
 *       {@code RESULT r <endpoints it has> OK} or {@code RESULT r <endpoints> <what went wrong>}.</li>
 *   <li>{@code CLOSE r}: closes that round's endpoint, waits until it has none, prints {@code CLOSED r OK} (or what
 *       went wrong).</li>
 *   <li>{@code END}: prints {@code COUNTERS <adopted> <paired> <ignored>}, closes the worker and exits 0 (3 on a
 *       leak).</li>
 * </ul>
 */
public final class ConnectPeer {

    public static void main(String[] args) throws Exception {
        LeakRecorder.install();
        Worker worker = new NucxBootstrap().name("peer").start();
        System.out.println("ADDRESS " + worker.address().toHex());
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        WorkerAddress peer = null;
        Endpoint current = null;
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.split(" ");
            switch (w[0]) {
                case "PEER" -> peer = WorkerAddress.fromHex(w[1]);
                case "ROUND" -> {
                    ConnectRound r = ConnectRound.run(worker, peer, Integer.parseInt(w[1]), 1);
                    current = r.endpoint();
                    int n = worker.endpoints().size();
                    String ok = r.error() != null ? r.error()
                            : !worker.endpoints().contains(current) ? "connect's endpoint is not the worker's" : "OK";
                    System.out.println("RESULT " + w[1] + " " + n + " " + ok);
                }
                case "CLOSE" -> {
                    current.close();
                    String outcome = ConnectRound.closeOutcome(current);
                    if (outcome == null && !ConnectRound.awaitNoEndpoints(worker)) {
                        outcome = "endpoints left: " + worker.endpoints();
                    }
                    System.out.println("CLOSED " + w[1] + " " + (outcome == null ? "OK" : outcome));
                }
                case "END" -> {
                    System.out.println("COUNTERS " + worker.counters().count(Worker.WIREUP_ADOPTED) + " "
                            + worker.counters().count(Worker.WIREUP_REQUEST_PAIRED) + " "
                            + worker.counters().count(Worker.WIREUP_REQUEST_IGNORED));
                    System.out.flush();
                    PeerExit.closeAndExit(worker, 20);
                }
                default -> throw new IllegalArgumentException("unknown command " + line);
            }
            System.out.flush();
        }
        System.exit(2); // stdin closed without END: the test went away
    }
}
