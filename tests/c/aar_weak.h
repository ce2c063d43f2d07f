/*
 * aar_weak.h: the C API of libaar.so (cabi/aar.h) with every function declared weak, as aar.h
 * advises, so that a test program also runs without the library (each function is then NULL).
 */
#ifndef AAR_TEST_WEAK_H
#define AAR_TEST_WEAK_H

#include "aar.h"

#pragma weak aar_set_mode
#pragma weak aar_set_mode_name
#pragma weak aar_set_auto
#pragma weak aar_disable
#pragma weak aar_enable
#pragma weak aar_policy_name
#pragma weak aar_iteration_begin
#pragma weak aar_iteration_end
#pragma weak aar_iteration_label
#pragma weak aar_iteration_index
#pragma weak aar_version

#endif
