/*
 * ARINC 653 APEX -- blackboard services (partix).
 *
 * A blackboard holds at most one message of up to MAX_MESSAGE_SIZE bytes, visible to every
 * process of the partition until it is replaced or cleared; reading does not consume it.
 * READ_BLACKBOARD waits while the blackboard is empty; DISPLAY_BLACKBOARD releases every waiting
 * reader. MESSAGE_ADDR of READ_BLACKBOARD must point to at least MAX_MESSAGE_SIZE bytes. TIME_OUT
 * is in nanoseconds: 0 never waits, INFINITE_TIME_VALUE waits without limit.
 */
#ifndef ARINC653_BLACKBOARD_H
#define ARINC653_BLACKBOARD_H

#include <arinc653/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MAX_NUMBER_OF_BLACKBOARDS SYSTEM_LIMIT_NUMBER_OF_BLACKBOARDS

typedef NAME_TYPE    BLACKBOARD_NAME_TYPE;

typedef APEX_INTEGER BLACKBOARD_ID_TYPE;

typedef enum { EMPTY = 0, OCCUPIED = 1 } EMPTY_INDICATOR_TYPE;

typedef struct {
    EMPTY_INDICATOR_TYPE EMPTY_INDICATOR;
    MESSAGE_SIZE_TYPE    MAX_MESSAGE_SIZE;
    WAITING_RANGE_TYPE   WAITING_PROCESSES;
} BLACKBOARD_STATUS_TYPE;

extern void CREATE_BLACKBOARD (
    /*in */ APEX_NAME_PARAM           BLACKBOARD_NAME,      /* BLACKBOARD_NAME_TYPE */
    /*in */ MESSAGE_SIZE_TYPE         MAX_MESSAGE_SIZE,
    /*out*/ BLACKBOARD_ID_TYPE        *BLACKBOARD_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void DISPLAY_BLACKBOARD (
    /*in */ BLACKBOARD_ID_TYPE        BLACKBOARD_ID,
    /*in */ MESSAGE_ADDR_TYPE         MESSAGE_ADDR,         /* by reference */
    /*in */ MESSAGE_SIZE_TYPE         LENGTH,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void READ_BLACKBOARD (
    /*in */ BLACKBOARD_ID_TYPE        BLACKBOARD_ID,
    /*in */ SYSTEM_TIME_TYPE          TIME_OUT,
    /*in */ MESSAGE_ADDR_TYPE         MESSAGE_ADDR,         /* the message is copied here */
    /*out*/ MESSAGE_SIZE_TYPE         *LENGTH,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void CLEAR_BLACKBOARD (
    /*in */ BLACKBOARD_ID_TYPE        BLACKBOARD_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void GET_BLACKBOARD_ID (
    /*in */ APEX_NAME_PARAM           BLACKBOARD_NAME,      /* BLACKBOARD_NAME_TYPE */
    /*out*/ BLACKBOARD_ID_TYPE        *BLACKBOARD_ID,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

extern void GET_BLACKBOARD_STATUS (
    /*in */ BLACKBOARD_ID_TYPE        BLACKBOARD_ID,
    /*out*/ BLACKBOARD_STATUS_TYPE    *BLACKBOARD_STATUS,
    /*out*/ RETURN_CODE_TYPE          *RETURN_CODE );

#ifdef __cplusplus
}
#endif

#endif /* ARINC653_BLACKBOARD_H */
