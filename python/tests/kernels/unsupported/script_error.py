import jax

x = jax.numpy.zeros(3)
raise ValueError("the user's own bug")  # line 4
