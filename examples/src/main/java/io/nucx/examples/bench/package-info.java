/** JMH microbenchmarks ({@code bin/nucx-jmh}). */
package io.nucx.examples.bench;
