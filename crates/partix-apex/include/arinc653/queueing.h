/*
 * ARINC 653 APEX -- queuing port services (partix).
 *
 * A queuing port is one end of a FIFO channel of at most MAX_NB_MESSAGE messages. MESSAGE_ADDR
 * of RECEIVE_QUEUING_MESSAGE must point to at least MAX_MESSAGE_SIZE bytes. TIME_OUT is in
 * nanoseconds: 0 never waits, INFINITE_TIME_VALUE waits without limit.
 */
#ifndef ARINC653_QUEUEING_H
#define ARINC653_QUEUEING_H

#include <arinc653/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MAX_NUMBER_OF_QUEUING_PORTS SYSTEM_LIMIT_NUMBER_OF_QUEUING_PORTS

typedef NAME_TYPE    QUEUING_PORT_NAME_TYPE;

typedef APEX_INTEGER QUEUING_PORT_ID_TYPE;

typedef struct {
    MESSAGE_RANGE_TYPE  NB_MESSAGE;
    MESSAGE_RANGE_TYPE  MAX_NB_MESSAGE;
    MESSAGE_SIZE_TYPE   MAX_MESSAGE_SIZE;
    PORT_DIRECTION_TYPE PORT_DIRECTION;
    WAITING_RANGE_TYPE  WAITING_PROCESSES;
} QUEUING_PORT_STATUS_TYPE;

extern void CREATE_QUEUING_PORT (
    /*in */ APEX_NAME_PARAM           QUEUING_PORT_NAME,    /* QUEUING_PORT_NAME_TYPE */
    /*in */ MESSAGE_SIZE_TYPE         MAX_MESSAGE_SIZE,
    /*in */ MESSAGE_RANGE_TYPE        MAX_NB_MESSAGE,
    /*in */ PORT_DIRECTION_TYPE       PORT_DIRECTION,
    /*in */ QUEUING_DISCIPLINE_TYPE   QUEUING_DISCIPLINE,
    /*out*/ QUEUING_PORT_ID_TYPE      *QUEUING_PORT_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void SEND_QUEUING_MESSAGE (
    /*in */ QUEUING_PORT_ID_TYPE      QUEUING_PORT_ID,
    /*in */ MESSAGE_ADDR_TYPE         MESSAGE_ADDR,      /* by reference */
    /*in */ MESSAGE_SIZE_TYPE         LENGTH,
    /*in */ SYSTEM_TIME_TYPE          TIME_OUT,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void RECEIVE_QUEUING_MESSAGE (
    /*in */ QUEUING_PORT_ID_TYPE      QUEUING_PORT_ID,
    /*in */ SYSTEM_TIME_TYPE          TIME_OUT,
    /*in */ MESSAGE_ADDR_TYPE         MESSAGE_ADDR,      /* the message is copied here */
    /*out*/ MESSAGE_SIZE_TYPE         *LENGTH,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void GET_QUEUING_PORT_ID (
    /*in */ APEX_NAME_PARAM           QUEUING_PORT_NAME,    /* QUEUING_PORT_NAME_TYPE */
    /*out*/ QUEUING_PORT_ID_TYPE      *QUEUING_PORT_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void GET_QUEUING_PORT_STATUS (
    /*in */ QUEUING_PORT_ID_TYPE      QUEUING_PORT_ID,
    /*out*/ QUEUING_PORT_STATUS_TYPE  *QUEUING_PORT_STATUS,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void CLEAR_QUEUING_PORT (
    /*in */ QUEUING_PORT_ID_TYPE      QUEUING_PORT_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

#ifdef __cplusplus
}
#endif

#endif /* ARINC653_QUEUEING_H */
