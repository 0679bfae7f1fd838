/*
 * ARINC 653 APEX -- buffer services (partix).
 *
 * A buffer is a FIFO of at most MAX_NB_MESSAGE messages of up to MAX_MESSAGE_SIZE bytes between
 * the processes of the partition. Processes waiting to send (full) or to receive (empty) are
 * released in the buffer's QUEUING_DISCIPLINE order (FIFO, or PRIORITY: current priority, FIFO
 * among equals). MESSAGE_ADDR of RECEIVE_BUFFER must point to at least MAX_MESSAGE_SIZE bytes.
 * TIME_OUT is in nanoseconds: 0 never waits, INFINITE_TIME_VALUE waits without limit.
 */
#ifndef ARINC653_BUFFER_H
#define ARINC653_BUFFER_H

#include <arinc653/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MAX_NUMBER_OF_BUFFERS SYSTEM_LIMIT_NUMBER_OF_BUFFERS

typedef NAME_TYPE    BUFFER_NAME_TYPE;

typedef APEX_INTEGER BUFFER_ID_TYPE;

typedef struct {
    MESSAGE_RANGE_TYPE NB_MESSAGE;
    MESSAGE_RANGE_TYPE MAX_NB_MESSAGE;
    MESSAGE_SIZE_TYPE  MAX_MESSAGE_SIZE;
    WAITING_RANGE_TYPE WAITING_PROCESSES;
} BUFFER_STATUS_TYPE;

extern void CREATE_BUFFER (
    /*in */ APEX_NAME_PARAM           BUFFER_NAME,          /* BUFFER_NAME_TYPE */
    /*in */ MESSAGE_SIZE_TYPE         MAX_MESSAGE_SIZE,
    /*in */ MESSAGE_RANGE_TYPE        MAX_NB_MESSAGE,
    /*in */ QUEUING_DISCIPLINE_TYPE   QUEUING_DISCIPLINE,
    /*out*/ BUFFER_ID_TYPE            *BUFFER_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void SEND_BUFFER (
    /*in */ BUFFER_ID_TYPE            BUFFER_ID,
    /*in */ MESSAGE_ADDR_TYPE         MESSAGE_ADDR,         /* by reference */
    /*in */ MESSAGE_SIZE_TYPE         LENGTH,
    /*in */ SYSTEM_TIME_TYPE          TIME_OUT,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void RECEIVE_BUFFER (
    /*in */ BUFFER_ID_TYPE            BUFFER_ID,
    /*in */ SYSTEM_TIME_TYPE          TIME_OUT,
    /*in */ MESSAGE_ADDR_TYPE         MESSAGE_ADDR,         /* the message is copied here */
    /*out*/ MESSAGE_SIZE_TYPE         *LENGTH,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void GET_BUFFER_ID (
    /*in */ APEX_NAME_PARAM           BUFFER_NAME,          /* BUFFER_NAME_TYPE */
    /*out*/ BUFFER_ID_TYPE            *BUFFER_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void GET_BUFFER_STATUS (
    /*in */ BUFFER_ID_TYPE            BUFFER_ID,
    /*out*/ BUFFER_STATUS_TYPE        *BUFFER_STATUS,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

#ifdef __cplusplus
}
#endif

#endif /* ARINC653_BUFFER_H */
