/*
 * partix extensions to the APEX port services (not part of ARINC 653).
 *
 * - Receive modes: how a process that waits on a port waits. PARTIX_RECV_SPIN busy-polls (lowest
 *   latency; burns the partition's CPU during its window), PARTIX_RECV_SPIN_THEN_PARK polls SPINS
 *   times and then parks (the default, 2000 spins), PARTIX_RECV_BLOCKING parks at once. Shared-
 *   memory transports park on a futex the other side wakes; udp/tcp channels park in poll(2).
 * - PARTIX_WAIT_SAMPLING_MESSAGE: wait up to TIME_OUT ns (0: do not wait; INFINITE_TIME_VALUE:
 *   no limit) for a sampling message newer than the last one the port returned, then read it as
 *   READ_SAMPLING_MESSAGE does. NOT_AVAILABLE: nothing newer and TIME_OUT = 0; TIMED_OUT:
 *   nothing newer in time; INVALID_MODE: a source port, or a wait by the error handler / with
 *   preemption locked.
 * - PARTIX_SEND_QUEUING_MESSAGES / PARTIX_RECEIVE_QUEUING_MESSAGES: batches of up to COUNT
 *   (at most 64 per call) messages with one lock, one publication and one wake-up check. Send:
 *   message i is MESSAGE_ADDRS[i] of LENGTHS[i] bytes; as many as there is room for are sent in
 *   order (SENT), waiting up to TIME_OUT only while not even the first fits. Receive: message i
 *   goes to MESSAGE_ADDR + i * MAX_MESSAGE_SIZE, its length to LENGTHS[i]; RECEIVED says how
 *   many, waiting up to TIME_OUT only while the port is empty. Return codes as
 *   SEND_QUEUING_MESSAGE / RECEIVE_QUEUING_MESSAGE; COUNT <= 0 is INVALID_PARAM. A send batch
 *   with any message longer than MAX_MESSAGE_SIZE is INVALID_CONFIG (nothing is sent), whatever
 *   the other messages: that comes before an empty message or a null address (INVALID_PARAM).
 */
#ifndef ARINC653_PARTIX_PORTS_H
#define ARINC653_PARTIX_PORTS_H

#include <arinc653/types.h>
#include <arinc653/sampling.h>
#include <arinc653/queueing.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    PARTIX_RECV_SPIN           = 0,
    PARTIX_RECV_SPIN_THEN_PARK = 1,
    PARTIX_RECV_BLOCKING       = 2
} PARTIX_RECV_MODE_TYPE;

extern void PARTIX_SET_QUEUING_PORT_RECV_MODE (
    /*in */ QUEUING_PORT_ID_TYPE      QUEUING_PORT_ID,
    /*in */ PARTIX_RECV_MODE_TYPE     MODE,
    /*in */ APEX_INTEGER              SPINS,          /* PARTIX_RECV_SPIN_THEN_PARK only */
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void PARTIX_SET_SAMPLING_PORT_RECV_MODE (
    /*in */ SAMPLING_PORT_ID_TYPE     SAMPLING_PORT_ID,
    /*in */ PARTIX_RECV_MODE_TYPE     MODE,
    /*in */ APEX_INTEGER              SPINS,          /* PARTIX_RECV_SPIN_THEN_PARK only */
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

/* The port's current mode: the configuration's partix:ReceiveMode, the default
 * (PARTIX_RECV_SPIN_THEN_PARK, 2000), or the last SET. SPINS is 0 unless SPIN_THEN_PARK. */
extern void PARTIX_GET_QUEUING_PORT_RECV_MODE (
    /*in */ QUEUING_PORT_ID_TYPE      QUEUING_PORT_ID,
    /*out*/ PARTIX_RECV_MODE_TYPE     *MODE,
    /*out*/ APEX_INTEGER              *SPINS,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void PARTIX_GET_SAMPLING_PORT_RECV_MODE (
    /*in */ SAMPLING_PORT_ID_TYPE     SAMPLING_PORT_ID,
    /*out*/ PARTIX_RECV_MODE_TYPE     *MODE,
    /*out*/ APEX_INTEGER              *SPINS,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void PARTIX_WAIT_SAMPLING_MESSAGE (
    /*in */ SAMPLING_PORT_ID_TYPE     SAMPLING_PORT_ID,
    /*in */ SYSTEM_TIME_TYPE          TIME_OUT,
    /*in */ MESSAGE_ADDR_TYPE         MESSAGE_ADDR,   /* the message is copied here */
    /*out*/ MESSAGE_SIZE_TYPE         *LENGTH,
    /*out*/ VALIDITY_TYPE             *VALIDITY,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void PARTIX_SEND_QUEUING_MESSAGES (
    /*in */ QUEUING_PORT_ID_TYPE      QUEUING_PORT_ID,
    /*in */ const MESSAGE_ADDR_TYPE   *MESSAGE_ADDRS, /* COUNT messages */
    /*in */ const MESSAGE_SIZE_TYPE   *LENGTHS,       /* their lengths */
    /*in */ APEX_INTEGER              COUNT,
    /*in */ SYSTEM_TIME_TYPE          TIME_OUT,
    /*out*/ APEX_INTEGER              *SENT,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void PARTIX_RECEIVE_QUEUING_MESSAGES (
    /*in */ QUEUING_PORT_ID_TYPE      QUEUING_PORT_ID,
    /*in */ SYSTEM_TIME_TYPE          TIME_OUT,
    /*in */ MESSAGE_ADDR_TYPE         MESSAGE_ADDR,   /* COUNT x MAX_MESSAGE_SIZE bytes */
    /*out*/ MESSAGE_SIZE_TYPE         *LENGTHS,       /* COUNT entries */
    /*in */ APEX_INTEGER              COUNT,
    /*out*/ APEX_INTEGER              *RECEIVED,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

#ifdef __cplusplus
}
#endif

#endif /* ARINC653_PARTIX_PORTS_H */
