"""Generated protocol stubs (allfours.v1); see proto/ and scripts/gen_proto.sh."""
