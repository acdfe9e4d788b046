"""Neural-network ops recorded as single graph nodes (softmax, losses, convolution, pooling,
normalization, attention, embedding, recurrent sequences): the ops behind paragrad.nn."""
