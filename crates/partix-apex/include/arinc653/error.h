/*
 * ARINC 653 APEX -- health monitoring services (partix).
 */
#ifndef ARINC653_ERROR_H
#define ARINC653_ERROR_H

#include <arinc653/types.h>

#ifdef __cplusplus
extern "C" {
#endif

extern void REPORT_APPLICATION_MESSAGE (
    /*in */ MESSAGE_ADDR_TYPE MESSAGE_ADDR,
    /*in */ MESSAGE_SIZE_TYPE LENGTH,
    /*out*/ RETURN_CODE_TYPE  *RETURN_CODE );

extern void CREATE_ERROR_HANDLER (
    /*in */ SYSTEM_ADDRESS_TYPE ENTRY_POINT,
    /*in */ STACK_SIZE_TYPE     STACK_SIZE,
    /*out*/ RETURN_CODE_TYPE    *RETURN_CODE );

extern void GET_ERROR_STATUS (
    /*out*/ ERROR_STATUS_TYPE *ERROR_STATUS,
    /*out*/ RETURN_CODE_TYPE  *RETURN_CODE );

extern void RAISE_APPLICATION_ERROR (
    /*in */ ERROR_CODE_TYPE         ERROR_CODE,
    /*in */ MESSAGE_ADDR_TYPE       MESSAGE_ADDR,
    /*in */ ERROR_MESSAGE_SIZE_TYPE LENGTH,
    /*out*/ RETURN_CODE_TYPE        *RETURN_CODE );

#ifdef __cplusplus
}
#endif

#endif /* ARINC653_ERROR_H */
