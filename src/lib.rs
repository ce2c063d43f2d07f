//! libaar.so
