/**
 * Internal: protocol selection, apart from the protocols (UCX's {@code proto_select.c}). Each protocol's pure probe
 * declares its cost as linear functions of the message size; {@code ProtoSelector} takes the lower envelope over the
 * size range, with user thresholds by priority, into a {@code ProtoTable}; {@code SelectionCache} keeps the tables of
 * one endpoint configuration by packed {@code SelectionKey}.
 */
package io.nucx.protocol.select;
