/*
 * ARINC 653 APEX (partix): the same as <arinc653/apex.h>, for code that includes <arinc653.h>.
 */
#ifndef ARINC653_H
#define ARINC653_H

#include <arinc653/apex.h>

#endif /* ARINC653_H */
