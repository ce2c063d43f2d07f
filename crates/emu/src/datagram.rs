//! Datagrams: GNI_EpPostData and its family.
