/*
 * ARINC 653 APEX -- time management services (partix).
 *
 * Include it as <arinc653/time.h>; it does not replace the C library's <time.h>.
 */
#ifndef ARINC653_TIME_H
#define ARINC653_TIME_H

#include <arinc653/types.h>

#ifdef __cplusplus
extern "C" {
#endif

extern void TIMED_WAIT (
    /*in */ SYSTEM_TIME_TYPE DELAY_TIME,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

extern void PERIODIC_WAIT (
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

extern void GET_TIME (
    /*out*/ SYSTEM_TIME_TYPE *SYSTEM_TIME,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

extern void REPLENISH (
    /*in */ SYSTEM_TIME_TYPE BUDGET_TIME,
    /*out*/ RETURN_CODE_TYPE *RETURN_CODE );

#ifdef __cplusplus
}
#endif

#endif /* ARINC653_TIME_H */
