package io.nucx.transport.testing;

import io.nucx.transport.diag.LeakLog;

import java.util.List;

/**
 * The tests' face of {@link LeakLog}: install before any buffer class initialises; each {@link #collect()} returns
 * the leaks reported since the previous one, so a test fails only on its own.
 */
public final class LeakRecorder {

    private LeakRecorder() {
    }

    /** Installs the recording detector factory and sets the level to PARANOID. Idempotent. */
    public static void install() {
        LeakLog.install();
    }

    /** Returns (and forgets) every leak reported so far. */
    public static List<String> collect() {
        return LeakLog.drain();
    }
}
